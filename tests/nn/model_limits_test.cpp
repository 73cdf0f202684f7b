// nn::check_model without LibTorch: the size an architecture implies, the
// parameter ceiling, and weights that do not add up to their header (a "model
// bomb": a few bytes naming a 64x1024 network) refused in milliseconds.
#include "chessrl/nn/model_limits.h"

#include <gtest/gtest.h>
#include <time.h>

#include <cstring>
#include <string>

#include "chessrl/nn/checkpoint.h"
#include "model_bomb.h"

namespace chessrl::nn {
namespace {

NetworkConfig net(const std::string& name) { return parse_network_name(name).value_or_throw(); }

// This thread's CPU time in milliseconds: what the check itself costs, whatever
// else the machine runs (a wall clock counts the time other tests hold the CPU).
double thread_cpu_ms() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) / 1e6;
}

// A checkpoint with every tensor `config` needs, all zeros.
Checkpoint zero_checkpoint(const NetworkConfig& config, std::int64_t version = 3) {
  Checkpoint c;
  c.info.config = config;
  c.info.version = version;
  for (const TensorSpec& spec : network_tensors(config)) {
    NamedTensor t;
    t.name = spec.name;
    t.type = spec.type;
    t.shape = spec.shape;
    t.data.resize(size_t(spec.bytes()));
    c.tensors.push_back(std::move(t));
  }
  return c;
}

std::string bomb_bytes() { return testing::model_bomb_bytes(); }

void expect_refused(const Result<void>& r, const std::string& part) {
  ASSERT_FALSE(r.ok()) << "expected a refusal mentioning: " << part;
  EXPECT_NE(r.error().find(part), std::string::npos) << r.error();
  EXPECT_NE(r.error().find("refused"), std::string::npos) << r.error();
}

TEST(ModelSize, CountsEveryTensorOfTheArchitecture) {
  // 1x8 by hand: input conv 112*8*9, five numbers per batch-norm channel
  // group (4 float vectors + 1 int64 counter), two tower convs, the policy
  // conv block and planes (73 + bias), value conv 8->32, fc1 2048->128, fc2 128->3,
  // the material head 128->1.
  const std::int64_t bn8 = 4 * 8 + 1, bn32 = 4 * 32 + 1;
  const std::int64_t expected = (112 * 8 * 9 + bn8) + 2 * (8 * 8 * 9 + bn8) + (8 * 8 * 9 + bn8) +
                                (73 * 8 + 73) + (32 * 8 + bn32) + (2048 * 128 + 128) +
                                (128 * 3 + 3) + (128 + 1);
  const ModelSize size = model_size(net("1x8"));
  EXPECT_EQ(size.parameters, expected);
  // 4 bytes a float, 8 for each of the 5 int64 counters.
  EXPECT_EQ(size.bytes, 4 * (expected - 5) + 8 * 5);

  // The default ceiling admits Leela-size networks and refuses the largest
  // architecture by a wide margin.
  const ModelSize leela = model_size(net("20x256"));
  EXPECT_GT(leela.parameters, 24'000'000);
  EXPECT_LT(leela.parameters * 3, kDefaultMaxModelParams);
  EXPECT_LT(model_size(net("10x128-se8")).parameters, kDefaultMaxModelParams);
  const ModelSize huge = model_size(net("64x1024"));
  EXPECT_GT(huge.parameters, 1'200'000'000);
  EXPECT_GT(huge.bytes, 4'800'000'000);
}

TEST(ModelSize, WritesThousands) {
  EXPECT_EQ(with_thousands(0), "0");
  EXPECT_EQ(with_thousands(999), "999");
  EXPECT_EQ(with_thousands(1000), "1,000");
  EXPECT_EQ(with_thousands(12345), "12,345");
  EXPECT_EQ(with_thousands(123456), "123,456");
  EXPECT_EQ(with_thousands(1234567), "1,234,567");
  EXPECT_EQ(with_thousands(-1234567), "-1,234,567");
  EXPECT_EQ(with_thousands(INT64_MIN), "-9,223,372,036,854,775,808");
}

TEST(CheckModel, ALegitimateCheckpointPasses) {
  for (const char* name : {"1x8", "2x16-se4", "6x64"}) {
    const Checkpoint c = zero_checkpoint(net(name));
    EXPECT_TRUE(check_model(c, {}).ok()) << name << ": " << check_model(c, {}).error();
    // Through the bytes too.
    auto parsed = parse_checkpoint(serialize_checkpoint(c));
    ASSERT_TRUE(parsed.ok()) << parsed.error();
    EXPECT_TRUE(check_model(*parsed, {}).ok()) << name;
  }
}

TEST(CheckModel, ABombIsRefusedInMillisecondsNamingTheNumbers) {
  const std::string bytes = bomb_bytes();
  EXPECT_LT(bytes.size(), 1000u);
  const double start = thread_cpu_ms();
  auto parsed = parse_checkpoint(bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.error();  // a well-formed file: only its claim is absurd
  const Result<void> refused = check_model(*parsed, {});
  const double ms = thread_cpu_ms() - start;
  expect_refused(refused, "model v7 asks for a 64x1024 network = 1,2");
  EXPECT_NE(refused.error().find("the ceiling is 100,000,000 parameters (--max-model-params)"),
            std::string::npos)
      << refused.error();
  // CPU time, not wall time: making even part of the 1.2-billion-parameter
  // network it names would take seconds of CPU; reading its header takes microseconds.
  EXPECT_LT(ms, 100.0);
  std::printf("bomb (%zu bytes naming 64x1024) refused in %.3f ms of CPU: %s\n", bytes.size(), ms,
              refused.error().c_str());

  // With no ceiling, the 4 bytes of weights still do not make a 64x1024 network.
  expect_refused(check_model(*parsed, {.max_parameters = 0}),
                 "model v7's weights are 4 bytes in 1 tensor(s); a 64x1024 network needs 4,8");
}

TEST(CheckModel, TheCeilingIsAnOption) {
  const Checkpoint c = zero_checkpoint(net("2x16"));
  const std::int64_t need = model_size(c.info.config).parameters;
  EXPECT_TRUE(check_model(c, {.max_parameters = need}).ok());
  expect_refused(check_model(c, {.max_parameters = need - 1}),
                 "the ceiling is " + with_thousands(need - 1));
  EXPECT_TRUE(check_model(c, {.max_parameters = 0}).ok());
}

TEST(CheckModel, WeightsThatDoNotMatchTheHeaderAreRefused) {
  // A 6x64 header over a 1x8 network's weights: far too few bytes.
  Checkpoint small = zero_checkpoint(net("1x8"));
  small.info.config = net("6x64");
  expect_refused(check_model(small, {}), "; a 6x64 network needs");

  const Checkpoint good = zero_checkpoint(net("2x16"));
  {
    Checkpoint c = good;  // a tensor missing (too few bytes), named
    const std::string missing = c.tensors[3].name;
    c.tensors.erase(c.tensors.begin() + 3);
    expect_refused(check_model(c, {}), "(checkpoint lacks tensor '" + missing + "')");
  }
  {
    Checkpoint c = good;  // a missing tensor made up for by an extra one
    c.tensors.back().name = "tower.9.conv1.weight";
    expect_refused(check_model(c, {}), "has tensor 'tower.9.conv1.weight' that a 2x16 network");
  }
  {
    Checkpoint c = good;  // the same bytes in another shape
    for (NamedTensor& t : c.tensors)
      if (t.name == "value.fc1.weight") std::swap(t.shape[0], t.shape[1]);
    expect_refused(check_model(c, {}), "'value.fc1.weight' has shape [2048,128]");
  }
  {
    Checkpoint c = good;  // a tensor whose data is not its shape's size
    c.tensors[0].data.resize(c.tensors[0].data.size() - 4);
    c.tensors[1].data.resize(c.tensors[1].data.size() + 4);
    expect_refused(check_model(c, {}), "'" + c.tensors[0].name + "' holds");
  }
  {
    Checkpoint c = good;  // a repeated tensor
    c.tensors.push_back(c.tensors[0]);
    expect_refused(check_model(c, {}), "repeats tensor");
  }
  {
    Checkpoint c = good;  // an architecture out of range (only in memory: parse refuses it)
    c.info.config.blocks = 65;
    expect_refused(check_model(c, {}), "blocks = 65");
  }
}

TEST(CheckModel, ATruncatedCheckpointIsRefusedByTheParser) {
  const std::string bytes = serialize_checkpoint(zero_checkpoint(net("2x16")));
  auto cut = parse_checkpoint(std::string_view(bytes).substr(0, bytes.size() - 100));
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.error().find("truncated"), std::string::npos) << cut.error();
}

}  // namespace
}  // namespace chessrl::nn

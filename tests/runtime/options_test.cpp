// The option groups of libs/runtime (options.h): each declares its flags with
// their defaults, parses them, refuses a bad value naming the flag, and turns
// its values into what the binaries use (a backend's options, a filled layout).
#include "chessrl/runtime/options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "parse_args.h"

namespace chessrl::runtime {
namespace {

using ::testing::HasSubstr;

using test_util::parse;

TEST(StatusListenOptions, KeepsTheServicesDefaultAndParsesBothFlags) {
  StatusListenOptions o;
  o.metrics_listen = "0.0.0.0:9101";
  CLI::App app;
  o.add_to(app);
  EXPECT_EQ(parse(app, {}), "");
  EXPECT_EQ(o.metrics_listen, "0.0.0.0:9101");
  EXPECT_EQ(o.probe_listen, "off");
  CLI::App again;
  o.add_to(again);
  EXPECT_EQ(parse(again, {"--metrics-listen", "off", "--probe-listen", "127.0.0.1:0"}), "");
  EXPECT_EQ(o.metrics_listen, "off");
  EXPECT_EQ(o.probe_listen, "127.0.0.1:0");
}

// chessrl-web's part: its page port answers /metrics, so only --probe-listen.
TEST(ProbeListenOptions, DeclaresTheProbeListenerAloneWithTheGroupsHelp) {
  ProbeListenOptions o;
  CLI::App app;
  o.add_to(app);
  EXPECT_EQ(parse(app, {}), "");
  EXPECT_EQ(o.probe_listen, "off");
  EXPECT_EQ(parse(app, {"--probe-listen", "127.0.0.1:0"}), "");
  EXPECT_EQ(o.probe_listen, "127.0.0.1:0");
  EXPECT_EQ(app.get_option_no_throw("--metrics-listen"), nullptr);
  StatusListenOptions both;
  CLI::App full;
  both.add_to(full);
  ASSERT_NE(full.get_option_no_throw("--probe-listen"), nullptr);
  EXPECT_EQ(app.get_option("--probe-listen")->get_description(),
            full.get_option("--probe-listen")->get_description());
}

TEST(DeviceOptions, DefaultsAreCpuFp32AndTheCeiling) {
  DeviceOptions o;
  CLI::App app;
  o.add_to(app);
  ASSERT_EQ(parse(app, {}), "");
  auto torch = o.torch_options();
  ASSERT_TRUE(torch.ok()) << torch.error();
  EXPECT_EQ(torch->device, "cpu");
  EXPECT_EQ(torch->precision, nn::Precision::kFloat32);
  EXPECT_EQ(torch->threads, 0);
  EXPECT_EQ(torch->limits.max_parameters, nn::kDefaultMaxModelParams);
}

TEST(DeviceOptions, ParsesEveryFlagIntoTheBackendOptions) {
  DeviceOptions o;
  CLI::App app;
  o.add_to(app);
  ASSERT_EQ(parse(app, {"--device", "cuda:1", "--precision", "bf16", "--nn-threads", "3",
                        "--max-model-params", "0"}),
            "");
  auto torch = o.torch_options();
  ASSERT_TRUE(torch.ok()) << torch.error();
  EXPECT_EQ(torch->device, "cuda:1");
  EXPECT_EQ(torch->precision, nn::Precision::kBFloat16);
  EXPECT_EQ(torch->threads, 3);
  EXPECT_EQ(torch->limits.max_parameters, 0);
}

TEST(DeviceOptions, RefusesBadValuesNamingTheFlag) {
  {
    DeviceOptions o;
    CLI::App app;
    o.add_to(app);
    EXPECT_THAT(parse(app, {"--nn-threads", "-1"}), HasSubstr("--nn-threads"));
  }
  {
    DeviceOptions o;
    CLI::App app;
    o.add_to(app);
    EXPECT_THAT(parse(app, {"--max-model-params", "-5"}), HasSubstr("--max-model-params"));
  }
  DeviceOptions precision;
  precision.precision = "fp8";
  auto torch = precision.torch_options();
  ASSERT_FALSE(torch.ok());
  EXPECT_THAT(torch.error(), HasSubstr("--precision"));
  DeviceOptions device;
  device.device = "tpu";
  torch = device.torch_options();
  ASSERT_FALSE(torch.ok());
  EXPECT_THAT(torch.error(), HasSubstr("--device tpu"));
}

TEST(DeviceOptions, WithoutPrecisionTheFlagIsNotDeclared) {
  DeviceOptions o;
  CLI::App app;
  o.add_to(app, /*with_precision=*/false);
  EXPECT_EQ(app.get_option_no_throw("--precision"), nullptr);
  EXPECT_NE(parse(app, {"--precision", "fp16"}), "");
}

TEST(LayoutOptions, SearchThreadsAnswersToItsOldNameThreads) {
  LayoutOptions o;
  int leaves = 8;
  CLI::App app;
  o.add_to(app, leaves);
  ASSERT_EQ(parse(app, {"--threads", "3", "--leaves", "4", "--concurrent", "10"}), "");
  EXPECT_EQ(o.search_threads, 3);
  EXPECT_EQ(leaves, 4);
  EXPECT_EQ(o.concurrent_games, 10);
  LayoutOptions renamed;
  CLI::App again;
  renamed.add_to(again, leaves);
  ASSERT_EQ(parse(again, {"--search-threads", "5"}), "");
  EXPECT_EQ(renamed.search_threads, 5);
}

TEST(LayoutOptions, LeavesKeepsTheSearchsDefault) {
  LayoutOptions o;
  int leaves = 8;
  CLI::App app;
  o.add_to(app, leaves);
  ASSERT_EQ(parse(app, {}), "");
  EXPECT_EQ(leaves, 8);
  EXPECT_EQ(o.workers, 0);
  EXPECT_EQ(o.search_threads, 0);
  EXPECT_EQ(o.batch, 0);
  EXPECT_EQ(o.concurrent_games, 0);
  EXPECT_EQ(o.cache, 0u);
}

TEST(LayoutOptions, RefusesBadValuesNamingTheFlag) {
  for (const auto& [flag, value] : std::vector<std::pair<std::string, std::string>>{
           {"--batch", "9000"}, {"--threads", "300"}, {"--workers", "-1"}, {"--leaves", "0"}}) {
    LayoutOptions o;
    int leaves = 8;
    CLI::App app;
    o.add_to(app, leaves);
    const std::string error = parse(app, {flag, value});
    // --threads is the old name of --search-threads: the error names the option.
    EXPECT_THAT(error, HasSubstr(flag == "--threads" ? "--search-threads" : flag)) << error;
  }
}

TEST(LayoutOptions, FillsTheZerosByTheLayoutRuleAndWritesThemBack) {
  LayoutOptions o;
  o.workers = 2;
  const SearchLayout filled = o.fill("cpu", 1, 8, 0);
  EXPECT_EQ(filled.workers, 2);
  EXPECT_EQ(o.search_threads, 4);  // twice the workers
  EXPECT_EQ(o.batch, 64);          // a CPU's batch
  EXPECT_EQ(o.concurrent_games, 4 * 64 / 8);
  EXPECT_EQ(filled.concurrent_games, o.concurrent_games);
  const nn::BatchEvaluatorOptions evaluator = o.evaluator_options(8);
  EXPECT_EQ(evaluator.workers, 2);
  EXPECT_EQ(evaluator.max_batch, 32 / 4 * 8);  // one thread's games' leaves

  LayoutOptions capped;
  capped.workers = 1;
  capped.fill("cuda", 0, 8, 5);
  EXPECT_EQ(capped.batch, 256);
  EXPECT_EQ(capped.concurrent_games, 5);  // never more games in flight than will be played
}

}  // namespace
}  // namespace chessrl::runtime

// The LibTorch side of nn::check_model: network_tensors() is the network's own
// list, network_from_checkpoint and make_torch_backend refuse a "model bomb"
// (a few hundred bytes whose header names a 64x1024 network, 4.8 GB) before
// allocating it (milliseconds, peak RSS flat), and a legitimate checkpoint
// still loads. Prints the refusal time and peak RSS before and after.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include "chessrl/nn/checkpoint.h"
#include "chessrl/nn/model_limits.h"
#include "chessrl/nn/torch_backend.h"
#include "chessrl/nn/torch_network.h"
#include "model_bomb.h"

namespace chessrl::nn {
namespace {

// Peak resident memory in KiB: VmHWM, which /proc/self/clear_refs ("5")
// resets to the current RSS, so a delta measures this step alone.
long peak_rss_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}
bool reset_peak_rss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return bool(clear);
}
long max_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

std::string bomb_bytes() { return testing::model_bomb_bytes(); }

TEST(ModelLimits, NetworkTensorsAreTheNetworksOwn) {
  for (NetworkConfig config : {NetworkConfig{1, 8}, NetworkConfig{2, 16, 4},
                               NetworkConfig{3, 12, 3, 5, 7}, NetworkConfig{2, 32, 8, 16, 64}}) {
    Network network = make_network(config, 1);
    const Checkpoint actual = to_checkpoint(network, {});
    std::map<std::string, std::pair<TensorType, std::vector<std::int64_t>>> have, computed;
    std::int64_t numel = 0;
    for (const NamedTensor& t : actual.tensors) {
      have[t.name] = {t.type, t.shape};
      numel += t.numel();
    }
    for (const TensorSpec& t : network_tensors(config)) computed[t.name] = {t.type, t.shape};
    EXPECT_EQ(computed, have) << config.name();
    EXPECT_EQ(model_size(config).parameters, numel) << config.name();
    std::int64_t params = 0;
    for (const auto& p : network->parameters()) params += p.numel();
    EXPECT_LT(params, numel) << "the count includes the batch-norm statistics";
    EXPECT_TRUE(check_model(actual, {}).ok()) << config.name();
  }
}

TEST(ModelLimits, ALegitimateCheckpointStillLoads) {
  Network network = make_network({2, 16}, 5);
  ModelInfo info;
  info.version = 4;
  auto parsed = parse_checkpoint(serialize_checkpoint(to_checkpoint(network, info)));
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  auto loaded = network_from_checkpoint(*parsed);
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  EXPECT_EQ((*loaded)->config(), (NetworkConfig{2, 16}));
  TorchBackendOptions options;
  options.threads = 1;
  EXPECT_TRUE(make_torch_backend(*parsed, options).ok());
  // A ceiling below its size refuses it, naming the option.
  options.limits.max_parameters = 1000;
  auto refused = make_torch_backend(*parsed, options);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("model v4 asks for a 2x16 network"), std::string::npos)
      << refused.error();
  EXPECT_NE(refused.error().find("--max-model-params"), std::string::npos) << refused.error();
}

TEST(ModelLimits, ABombIsRefusedBeforeAnythingIsAllocated) {
  const std::string bytes = bomb_bytes();
  const bool reset = reset_peak_rss();
  const long hwm_before = peak_rss_kib(), maxrss_before = max_rss_kib();
  const auto start = std::chrono::steady_clock::now();

  // What a self-play replica or the evaluator does with registry bytes.
  auto checkpoint = parse_checkpoint(bytes);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.error();
  TorchBackendOptions options;
  options.threads = 1;
  auto backend = make_torch_backend(*checkpoint, options);
  auto network = network_from_checkpoint(*checkpoint, {.max_parameters = 0});

  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const long hwm_after = peak_rss_kib(), maxrss_after = max_rss_kib();
  ASSERT_FALSE(backend.ok());
  EXPECT_NE(backend.error().find("model v7 asks for a 64x1024 network = 1,2"), std::string::npos)
      << backend.error();
  // With the ceiling off, the missing weights still refuse it.
  ASSERT_FALSE(network.ok());
  EXPECT_NE(network.error().find("weights are 4 bytes"), std::string::npos) << network.error();

  std::printf(
      "model bomb: %zu bytes naming 64x1024 (%s parameters, %s bytes) refused in %.2f ms; "
      "peak RSS (VmHWM%s) %ld -> %ld KiB, ru_maxrss %ld -> %ld KiB\n  %s\n  %s\n",
      bytes.size(), with_thousands(model_size(checkpoint->info.config).parameters).c_str(),
      with_thousands(model_size(checkpoint->info.config).bytes).c_str(), ms,
      reset ? ", reset first" : ", not resettable here", hwm_before, hwm_after, maxrss_before,
      maxrss_after, backend.error().c_str(), network.error().c_str());
  EXPECT_LT(ms, 500.0);
  // Building the network would take 4.8 GB; the refusal takes almost nothing.
  EXPECT_LT(hwm_after - hwm_before, 50 * 1024);
  EXPECT_LT(maxrss_after - maxrss_before, 50 * 1024);
}

}  // namespace
}  // namespace chessrl::nn

// `promtool check metrics` (Prometheus's own parser and linter) on what the
// Registry serializes. promtool comes with the Debian package prometheus
// (deps/apt.txt); without it this test fails.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "chessrl/core/subprocess.h"
#include "chessrl/metrics/gpu_sampler.h"
#include "chessrl/metrics/registry.h"

namespace chessrl::metrics {
namespace {

struct Check {
  int status = -1;
  std::string output;
};

// Runs `promtool check metrics` with `text` on its stdin.
Check promtool_check(const std::string& text) {
  Check check;
  const auto promtool = find_program("promtool");
  if (!promtool) {
    check.output = "promtool not found in PATH (apt-get install prometheus)";
    return check;
  }
  char path[] = "/tmp/chessrl_promtool_XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) {
    check.output = "mkstemp failed";
    return check;
  }
  ::close(fd);
  std::ofstream(path) << text;
  const std::string command = *promtool + " check metrics < " + path + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe != nullptr) {
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) check.output.append(buf, n);
    const int status = ::pclose(pipe);
    check.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  ::unlink(path);
  return check;
}

TEST(Promtool, AcceptsWhatTheRegistryWrites) {
  ::setenv("CHESSRL_NVML_LIBRARY", CHESSRL_FAKE_NVML, 1);
  Registry registry;
  add_build_info(registry);
  GpuSampler gpus(registry);
  ::unsetenv("CHESSRL_NVML_LIBRARY");
  ASSERT_EQ(gpus.gpus(), 2);
  registry.counter("chessrl_selfplay_games_total", "Games finished").inc(12);
  registry
      .counter("chessrl_replay_games_rejected_total", "Games refused, by reason",
               {{"reason", "illegal_move"}})
      .inc(2);
  registry
      .counter("chessrl_replay_games_rejected_total", "Games refused, by reason",
               {{"reason", "bad \"policy\"\ntarget\\"}})
      .inc();
  registry.gauge("chessrl_replay_positions", "Positions in the window").set(123456);
  registry.gauge("chessrl_trainer_loss", "Loss", {{"head", "policy"}}).set(2.5e-3);
  registry.gauge("chessrl_trainer_loss", "Loss", {{"head", "value"}}).set(-0.0);
  registry.gauge("chessrl_eval_elo", "Elo \\ estimate\nper opponent", {{"opponent", "sf-1"}})
      .set(-1234.5);
  Histogram& batch = registry.histogram("chessrl_inference_batch_size", "Positions per pass",
                                        exponential_buckets(1, 2, 10));
  for (int i = 1; i <= 300; ++i) batch.observe(double(i));
  Histogram& latency = registry.histogram("chessrl_inference_latency_seconds", "Latency",
                                          {0.001, 0.01, 0.1}, {{"worker", "0"}});
  latency.observe(0.005);
  registry.histogram("chessrl_inference_latency_seconds", "Latency", {0.001, 0.01, 0.1},
                     {{"worker", "1"}});
  registry.histogram("chessrl_empty_bounds_seconds", "Only +Inf", {}).observe(3);

  const std::string text = registry.serialize();
  const Check check = promtool_check(text);
  EXPECT_EQ(check.status, 0) << check.output << "\n--- input ---\n" << text;
  EXPECT_EQ(check.output, "") << text;
}

// The check itself can fail: promtool refuses a counter without _total.
TEST(Promtool, RefusesWhatItShould) {
  const Check check =
      promtool_check("# HELP chessrl_games Games\n# TYPE chessrl_games counter\nchessrl_games 1\n");
  EXPECT_NE(check.status, 0) << check.output;
  EXPECT_NE(check.output.find("_total"), std::string::npos) << check.output;
}

}  // namespace
}  // namespace chessrl::metrics

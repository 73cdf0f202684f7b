// The chessrl-trainer binary under faults, two ranks over Gloo on loopback:
//   - a model registry that accepts calls and never answers: both ranks keep
//     training and finish (publishing runs in the background);
//   - rank 1 SIGKILLed: rank 0 fails within seconds naming the collective, and
//     still writes a checkpoint at the step reached; a restarted pair resumes;
//   - rank 0 SIGKILLed: rank 1 fails within seconds; a restarted pair resumes
//     from rank 0's last checkpoint;
//   - Redis flushed (FLUSHALL) under a running trainer with --max-reuse: it
//     neither crashes nor stalls; it waits for new data and continues;
//   - --schedule cosine with --steps 0 refused; the summary line is JSON even
//     for a checkpoint path that is not UTF-8;
//   - a data fetch that never returns: /healthz (on the metrics and the probe
//     port) turns 503 once --stall-timeout passes without progress, naming
//     the step; SIGTERM still stops it.
#include <csignal>
#include <fstream>
#include <string>

#include "chessrl/replay/redis_store.h"
#include "hanging_registry.h"
#include "trainer_test_util.h"

namespace chessrl::trainer_service {
namespace {

TEST_F(TrainerBinaryTest, TwoRanksKeepTrainingWhileTheRegistryNeverAnswers) {
  testing::HangingRegistry hanging;
  // One registry call may block 30 s; a collective 10 s: a publish inside the
  // step loop would kill rank 1.
  const std::vector<std::string> args = {"--batch-size",
                                         "8",
                                         "--steps",
                                         "40",
                                         "--publish-every",
                                         "2",
                                         "--registry",
                                         hanging.address(),
                                         "--rpc-deadline",
                                         "30",
                                         "--collective-timeout",
                                         "10",
                                         "--publish-wait",
                                         "1",
                                         "--checkpoint-dir",
                                         path("hang")};
  const auto started = std::chrono::steady_clock::now();
  Pair pair = start_ranks("hang", args);
  const RunResult r0 = finish(pair.rank0, 90s);
  const RunResult r1 = finish(pair.rank1, 90s);
  const auto took = std::chrono::steady_clock::now() - started;
  const int calls = hanging.calls();
  hanging.shutdown();
  ASSERT_EQ(r1.code, 0) << describe(r1) << "\nrank 0:\n" << describe(r0);
  ASSERT_EQ(r0.code, 0) << describe(r0);
  EXPECT_EQ(r0.summary["end_step"], 40);
  EXPECT_EQ(r1.summary["end_step"], 40);
  EXPECT_GE(calls, 1) << describe(r0);
  EXPECT_EQ(r0.summary["published"], 0);
  EXPECT_GT(r0.summary["publish_skipped"].get<int>(), 0) << describe(r0);
  EXPECT_LT(took, 25s) << describe(r0);
}

// True if /proc/<pid>/status says the process ignores SIGPIPE (SigIgn is a
// hexadecimal mask, bit N-1 for signal N).
bool ignores_sigpipe(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("SigIgn:", 0) != 0) continue;
    const unsigned long long mask = std::stoull(line.substr(7), nullptr, 16);
    return ((mask >> (SIGPIPE - 1)) & 1ULL) != 0;
  }
  return false;
}

class TrainerFaultTest : public TrainerBinaryTest {
 protected:
  // A pair training `steps` (0: until stopped), checkpointing every 3 steps.
  static Pair start_pair(const std::string& name, const std::string& ckpt,
                         const std::string& steps) {
    return start_ranks(name, {"--batch-size", "8", "--steps", steps, "--checkpoint-every", "3",
                              "--checkpoint-dir", ckpt, "--collective-timeout", "60"});
  }

  // A restarted pair resumes from `step` and trains 2 more steps.
  static void expect_pair_resumes(const std::string& name, const std::string& ckpt,
                                  std::int64_t step) {
    Pair again = start_pair(name, ckpt, std::to_string(step + 2));
    const RunResult r0 = finish(again.rank0, 60s);
    const RunResult r1 = finish(again.rank1, 60s);
    ASSERT_EQ(r0.code, 0) << describe(r0) << "\nrank 1:\n" << describe(r1);
    ASSERT_EQ(r1.code, 0) << describe(r1);
    EXPECT_EQ(r0.summary["resumed"], true);
    EXPECT_EQ(r0.summary["start_step"], step);
    EXPECT_EQ(r1.summary["start_step"], step);
    EXPECT_EQ(r0.summary["end_step"], step + 2);
    EXPECT_EQ(r0.summary["weights_hash"], r1.summary["weights_hash"]);
  }
};

TEST_F(TrainerFaultTest, AfterRankOneIsKilledRankZeroCheckpointsAndFailsPromptly) {
  const std::string ckpt = path("kill1");
  Pair pair = start_pair("kill1", ckpt, "0");
  ASSERT_FALSE(wait_for_checkpoint(ckpt, 3, pair.rank0, 60s).empty()) << pair.rank0.err();
  pair.rank1.signal(SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  const RunResult r0 = finish(pair.rank0, 70s);
  const auto took = std::chrono::steady_clock::now() - killed;
  EXPECT_EQ(r0.code, 1) << describe(r0);
  EXPECT_LT(took, 30s) << "well before --collective-timeout 60\n" << describe(r0);
  EXPECT_NE(r0.err.find("failed"), std::string::npos) << describe(r0);
  // The work since the last periodic checkpoint is not lost.
  const std::string said = "after the failure, the checkpoint of step ";
  const auto at = r0.err.find(said);
  ASSERT_NE(at, std::string::npos) << describe(r0);
  const std::int64_t step = std::atoll(r0.err.c_str() + at + said.size());
  const auto latest = train::latest_checkpoint(ckpt).value_or_throw();
  EXPECT_EQ(checkpoint_step(latest), step);
  expect_pair_resumes("kill1-again", ckpt, step);
}

TEST_F(TrainerFaultTest, AfterRankZeroIsKilledRankOneFailsPromptlyAndThePairResumes) {
  const std::string ckpt = path("kill0");
  Pair pair = start_pair("kill0", ckpt, "0");
  ASSERT_FALSE(wait_for_checkpoint(ckpt, 3, pair.rank0, 60s).empty()) << pair.rank0.err();
  // gloo writes to a dead peer with writev(2): SIGPIPE must be ignored, or rank
  // 1 dies of it (exit 141) instead of failing the collective and saying so.
  EXPECT_TRUE(ignores_sigpipe(pair.rank1.pid())) << "rank 1 does not ignore SIGPIPE";
  pair.rank0.signal(SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  const RunResult r1 = finish(pair.rank1, 70s);
  const auto took = std::chrono::steady_clock::now() - killed;
  EXPECT_EQ(r1.code, 1) << describe(r1);
  EXPECT_LT(took, 30s) << "well before --collective-timeout 60\n" << describe(r1);
  EXPECT_NE(r1.err.find("failed"), std::string::npos) << describe(r1);
  finish(pair.rank0, 10s);
  const auto latest = train::latest_checkpoint(ckpt).value_or_throw();
  ASSERT_FALSE(latest.empty());
  expect_pair_resumes("kill0-again", ckpt, checkpoint_step(latest));
}

// Waits until the child's stderr holds `text` at or after `from`; its position.
std::size_t wait_for_log(Child& child, const std::string& text, std::size_t from,
                         std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    const auto at = child.err().find(text, from);
    if (at != std::string::npos) return at;
    if (child.wait(0ms)) return std::string::npos;
    std::this_thread::sleep_for(50ms);
  }
  return std::string::npos;
}

TEST_F(TrainerBinaryTest, RedisFlushedUnderARunningTrainerWaitsForNewDataAndContinues) {
  auto redis = harness::RedisServer::start();
  replay::RedisOptions options;
  options.port = redis->port();
  options.password = redis->password();
  options.window_positions = 100000;
  options.backoff_max = 200ms;
  options.command_timeout = 2000ms;
  replay::RedisReplayStore store(options);
  metrics::Registry registry;
  replay_service::ReplayServer server(store, store, registry, testing::fast_server_options());
  rpc::ReplayClient client(testing::single_try_client(server.port()));
  ASSERT_TRUE(client.push_games(testing::batch(1, 4, 40)).ok());
  Child child = Child::start(
      {CHESSRL_TRAINER_BINARY, "--replay", "127.0.0.1:" + std::to_string(server.port()), "--net",
       "2x16", "--device", "cpu", "--threads", "1", "--log-every", "10", "--metrics-listen", "off",
       "--batch-size", "8", "--max-reuse", "1", "--min-window", "0", "--checkpoint-dir",
       path("flush")},
      {}, dir(), "flush");
  // Trains up to the cap, pauses; the store is flushed under it.
  const auto paused = wait_for_log(child, "max_reuse", 0, 90s);
  ASSERT_NE(paused, std::string::npos) << child.err();
  redis->cli({"FLUSHALL"});
  // New games: the trainer sees the counter restart, and trains on them.
  ASSERT_TRUE(client.push_games(testing::batch(100, 2, 40, "new-")).ok());
  const auto reset = wait_for_log(child, "went down from", paused, 30s);
  ASSERT_NE(reset, std::string::npos) << child.err();
  const auto resumed = wait_for_log(child, "resumed", reset, 30s);
  ASSERT_NE(resumed, std::string::npos) << "stalled after the flush:\n" << child.err();
  // ... up to the cap on the new positions alone, then pauses again.
  ASSERT_NE(wait_for_log(child, "paused", resumed, 60s), std::string::npos) << child.err();
  child.signal(SIGTERM);
  const RunResult r = finish(child, 60s);
  ASSERT_EQ(r.code, 0) << describe(r);
  ASSERT_TRUE(r.summary.is_object()) << r.out;
}

TEST_F(TrainerBinaryTest, CosineWithoutALengthIsRefusedAndTheSummaryIsJson) {
  const RunResult cosine = run("bad-cosine", {"--schedule", "cosine"}, {}, 20s);
  EXPECT_EQ(cosine.code, 2) << describe(cosine);
  EXPECT_NE(cosine.err.find("--schedule cosine"), std::string::npos) << describe(cosine);
  EXPECT_NE(cosine.err.find("--steps is 0"), std::string::npos) << describe(cosine);
  EXPECT_NE(cosine.err.find("--schedule-steps"), std::string::npos) << describe(cosine);

  // A checkpoint path with a quote, a tab and a byte that is not UTF-8.
  const std::string odd = path("odd \"dir\"\t\xff");
  const RunResult r = run("json", {"--steps", "1", "--batch-size", "8", "--checkpoint-dir", odd});
  ASSERT_EQ(r.code, 0) << describe(r);
  ASSERT_TRUE(r.summary.is_object()) << r.out;
  const std::string checkpoint = r.summary["checkpoint"].get<std::string>();
  EXPECT_NE(checkpoint.find("odd \"dir\"\t"), std::string::npos) << checkpoint;
  EXPECT_EQ(r.summary["end_step"], 1);
  EXPECT_EQ(r.summary["published"], 0);
}

// The replay service accepts the connection and never answers: a gRPC server
// whose generic service never takes a call. The prefetcher's Sample hangs (its
// deadline is 600 s), no step is done and no fetch returns. No data gates
// (their status call would hang the same way, before the step).
// A liveness probe must see that, and a rank waiting on a hung call must still
// stop on SIGTERM.
TEST_F(TrainerBinaryTest, HealthzTurns503OnceAFetchHangsPastTheStallTimeout) {
  testing::SilentServer silent;
  Child child = Child::start(
      {CHESSRL_TRAINER_BINARY, "--replay", silent.address(), "--net", "2x16", "--device", "cpu",
       "--threads", "1", "--batch-size", "8", "--steps", "5", "--min-window", "0",
       "--max-reuse", "0", "--metrics-listen", "127.0.0.1:0",
       "--probe-listen", "127.0.0.1:0", "--rpc-deadline", "600", "--collective-timeout", "1",
       "--stall-timeout", "4"},
      {}, dir(), "stall");
  const int port = testing::logged_port(path("stall.err"), "metrics on port ", 30s);
  const int probes = testing::logged_port(path("stall.err"), "probes on port ", 30s);
  ASSERT_GT(port, 0) << child.err();
  ASSERT_GT(probes, 0) << child.err();
  const auto started = std::chrono::steady_clock::now();
  std::string health = http_get(port, "/healthz");
  EXPECT_NE(health.find(" 200 "), std::string::npos) << health;  // within its bound yet
  while (std::chrono::steady_clock::now() - started < 30s &&
         health.find(" 503 ") == std::string::npos) {
    std::this_thread::sleep_for(200ms);
    health = http_get(port, "/healthz");
  }
  ASSERT_NE(health.find(" 503 "), std::string::npos) << health << "\n" << child.err();
  EXPECT_NE(health.find("no progress for"), std::string::npos) << health;
  // What it was in: the step, or waiting for its data (a first fetch may fail
  // at once while the channel connects; the next one hangs).
  EXPECT_NE(health.find("step 1"), std::string::npos) << health;
  EXPECT_NE(health.find("within 4 s"), std::string::npos) << health;
  // The kubelet's port says the same; /livez there only says the process serves.
  EXPECT_NE(http_get(probes, "/healthz").find(" 503 "), std::string::npos);
  EXPECT_NE(http_get(probes, "/livez").find(" 200 "), std::string::npos);
  EXPECT_EQ(http_get(probes, "/metrics").find(" 200 "), std::string::npos);  // not served there

  child.signal(SIGTERM);
  const RunResult r = finish(child, 30s);
  EXPECT_EQ(r.code, 0) << describe(r);
}

TEST_F(TrainerBinaryTest, AStallTimeoutNotAboveTheCollectiveTimeoutIsRefused) {
  const RunResult r = run("stall-bad", {"--stall-timeout", "60", "--collective-timeout", "60"});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("--stall-timeout 60 must be longer than --collective-timeout 60"),
            std::string::npos)
      << describe(r);
}

}  // namespace
}  // namespace chessrl::trainer_service

// `chessrl local`'s supervisor with /bin/sh children and millisecond backoffs:
// a killed child is restarted and counted, the backoff doubles, a crash loop
// stops the run naming the child and its log's end, an optional child is left
// stopped instead, nothing is restarted once stop_all() began, and a child
// whose liveness check keeps failing is stopped (SIGKILL when it ignores
// SIGTERM) and restarted.
#include "local/supervisor.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "chessrl/metrics/registry.h"

namespace chessrl::tool {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

RestartPolicy fast() {
  RestartPolicy p;
  p.first_backoff = 20ms;
  p.max_backoff = 80ms;
  p.healthy_after = 10s;
  p.max_crashes = 4;
  p.crash_window = 60s;
  p.liveness_period = 20ms;
  p.liveness_failures = 3;
  p.liveness_grace = 200ms;
  return p;
}

class SupervisorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("supervisor-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  ChildSpec sh(const std::string& name, const std::string& script) const {
    return ChildSpec{name, {"/bin/sh", "-c", script}, {}, (dir_ / (name + ".log")).string()};
  }
  // Polls until `done` or 30 s (only a hang takes that long); the last poll's result.
  template <class Done>
  Supervisor::Poll poll_until(Supervisor& s, Done done) {
    Supervisor::Poll last;
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < deadline) {
      last = s.poll();
      if (done(last)) break;
      std::this_thread::sleep_for(5ms);
    }
    return last;
  }
  fs::path dir_;
  metrics::Registry registry_;
};

TEST_F(SupervisorTest, AKilledChildIsRestartedAndCounted) {
  Supervisor s(fast(), registry_);
  ASSERT_TRUE(s.launch(sh("worker", "exec sleep 60")).ok());
  const int first = s.child("worker")->pid();
  ::kill(first, SIGKILL);
  const auto polled = poll_until(s, [&](const Supervisor::Poll& p) { return p.restarted; });
  ASSERT_TRUE(polled.restarted);
  EXPECT_FALSE(polled.stop_reason);
  ASSERT_NE(s.child("worker"), nullptr);
  EXPECT_NE(s.child("worker")->pid(), first);
  EXPECT_EQ(s.restarts("worker"), 1);
  EXPECT_EQ(s.restarts_summary(), "worker \u21bb1");
  const std::string text = registry_.serialize();
  EXPECT_NE(text.find("chessrl_local_child_restarts_total{child=\"worker\"} 1"), std::string::npos)
      << text;
  EXPECT_NE(text.find("chessrl_local_child_up{child=\"worker\"} 1"), std::string::npos) << text;
  s.stop_all();
  EXPECT_TRUE(s.unclean_exits().empty() ||
              s.unclean_exits().front().find("SIGTERM") != std::string::npos);
}

TEST_F(SupervisorTest, ACrashLoopStopsTheRunWithTheEndOfTheLog) {
  Supervisor s(fast(), registry_);
  ASSERT_TRUE(
      s.launch(sh("broken", "echo 'cannot start: no such option --frobnicate'; exit 3")).ok());
  const auto start = std::chrono::steady_clock::now();
  const auto polled = poll_until(s, [](const Supervisor::Poll& p) { return bool(p.stop_reason); });
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(polled.stop_reason);
  EXPECT_EQ(s.restarts("broken"), 3);  // 4 exits: the first run and 3 restarts
  // Backoffs 20, 40, 80 ms: at least their sum went by.
  EXPECT_GE(took, 140ms);
  const std::string& why = *polled.stop_reason;
  EXPECT_NE(why.find("broken exited 4 times"), std::string::npos) << why;
  EXPECT_NE(why.find("exit status 3"), std::string::npos) << why;
  EXPECT_NE(why.find((dir_ / "broken.log").string()), std::string::npos) << why;
  EXPECT_NE(why.find("no such option --frobnicate"), std::string::npos) << why;
  // Only the last run's lines, not every start's.
  EXPECT_EQ(why.find("no such option"), why.rfind("no such option")) << why;
  s.stop_all();
}

TEST_F(SupervisorTest, AnOptionalChildThatCrashLoopsIsLeftStopped) {
  Supervisor s(fast(), registry_);
  ASSERT_TRUE(s.launch(sh("graphs", "exit 1"), /*optional=*/true).ok());
  ASSERT_TRUE(s.launch(sh("worker", "exec sleep 60")).ok());
  poll_until(s, [&](const Supervisor::Poll&) { return s.gave_up("graphs"); });
  EXPECT_TRUE(s.gave_up("graphs"));
  EXPECT_EQ(s.child("graphs"), nullptr);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(s.poll().stop_reason);
  EXPECT_NE(s.child("worker"), nullptr);
  s.stop_all();
}

TEST_F(SupervisorTest, NothingIsRestartedOnceStopping) {
  Supervisor s(fast(), registry_);
  ASSERT_TRUE(s.launch(sh("worker", "exec sleep 60")).ok());
  s.stop_all();
  std::this_thread::sleep_for(50ms);
  const auto polled = s.poll();
  EXPECT_FALSE(polled.restarted);
  EXPECT_FALSE(polled.stop_reason);
  EXPECT_EQ(s.restarts("worker"), 0);
}

TEST_F(SupervisorTest, AChildThatCannotStartIsAnError) {
  Supervisor s(fast(), registry_);
  auto started =
      s.launch(ChildSpec{"ghost", {"/nonexistent/program"}, {}, (dir_ / "g.log").string()});
  ASSERT_FALSE(started.ok());
  EXPECT_NE(started.error().find("/nonexistent/program"), std::string::npos) << started.error();
}

// chessrl local starts a child on port 0, reads the port it chose from its
// log, and pins it: the restarts run the pinned command line.
TEST_F(SupervisorTest, ARestartRunsTheCommandLineSetSinceLaunch) {
  Supervisor s(fast(), registry_);
  ASSERT_TRUE(s.launch(sh("server", "echo listen=0; exec sleep 60")).ok());
  s.set_argv("server", {"/bin/sh", "-c", "echo listen=4242; exec sleep 60"});
  ::kill(s.child("server")->pid(), SIGKILL);
  ASSERT_TRUE(poll_until(s, [](const Supervisor::Poll& p) { return p.restarted; }).restarted);
  const std::string log = s.child("server")->log_tail(20);
  EXPECT_NE(log.find("listen=4242"), std::string::npos) << log;
  s.stop_all();
}

// A first start that failed where the caller saw it (redis-server on a port
// taken meanwhile) starts again at once, not counted as a restart.
TEST_F(SupervisorTest, StartAgainIsNotARestart) {
  Supervisor s(fast(), registry_);
  auto first = s.launch(sh("redis", "exit 1"));
  ASSERT_TRUE(first.ok());
  while (!(*first)->exited()) std::this_thread::sleep_for(5ms);
  s.set_argv("redis", {"/bin/sh", "-c", "exec sleep 60"});
  auto again = s.start_again("redis");
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_FALSE((*again)->exited());
  EXPECT_EQ(s.restarts("redis"), 0);
  EXPECT_FALSE(s.start_again("redis").ok());  // still running
  EXPECT_FALSE(s.start_again("nobody").ok());
  s.stop_all();
}

}  // namespace
}  // namespace chessrl::tool

namespace chessrl::tool {
namespace {

class LivenessTest : public SupervisorTest {};

TEST_F(LivenessTest, AChildFailingItsCheckInARowIsStoppedAndRestarted) {
  Supervisor s(fast(), registry_);
  // Its first run ignores SIGTERM, as a rank stuck in a kernel write or a
  // collective may not act on it: the grace ends with SIGKILL. (Its restart
  // does not, so that stop_all() is quick.)
  const std::string marker = (dir_ / "ran-once").string();
  ASSERT_TRUE(s.launch(sh("trainer-0", "if [ -e " + marker + " ]; then exec sleep 60; fi; touch " +
                                          marker + "; trap '' TERM; while :; do sleep 1; done"))
                  .ok());
  const int first = s.child("trainer-0")->pid();
  std::atomic<int> checks{0};
  std::atomic<bool> stuck{true};
  s.set_liveness("trainer-0", [&]() -> std::string {
    ++checks;
    return stuck ? "HTTP 503: no progress for 901 s: still in 'training step 8'" : "";
  });
  const auto polled = poll_until(s, [](const Supervisor::Poll& p) { return p.restarted; });
  ASSERT_TRUE(polled.restarted);
  EXPECT_GE(checks.load(), 3);  // three failures in a row before the stop
  ASSERT_NE(s.child("trainer-0"), nullptr);
  EXPECT_NE(s.child("trainer-0")->pid(), first);
  EXPECT_EQ(s.restarts("trainer-0"), 1);
  const std::string log = s.child("trainer-0")->log_tail(5);
  EXPECT_NE(log.find("(restart 1)"), std::string::npos) << log;
  stuck = false;  // healthy now: no more restarts
  std::this_thread::sleep_for(150ms);
  for (int i = 0; i < 20; ++i) {
    EXPECT_FALSE(s.poll().restarted);
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(s.restarts("trainer-0"), 1);
  s.stop_all();
}

TEST_F(LivenessTest, FailuresMustComeInARow) {
  Supervisor s(fast(), registry_);
  ASSERT_TRUE(s.launch(sh("trainer-0", "exec sleep 60")).ok());
  const int pid = s.child("trainer-0")->pid();
  std::atomic<int> checks{0};
  // Every other check fails: never three in a row.
  s.set_liveness("trainer-0", [&]() -> std::string {
    return ++checks % 2 == 0 ? "connection refused" : "";
  });
  // Until twelve checks ran (six failures, never three in a row), however long a
  // busy machine makes that; 30 s only if the checks stopped.
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (checks.load() < 12 && std::chrono::steady_clock::now() < deadline) {
    EXPECT_FALSE(s.poll().restarted);
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_GE(checks.load(), 12);
  ASSERT_NE(s.child("trainer-0"), nullptr);
  EXPECT_EQ(s.child("trainer-0")->pid(), pid);
  EXPECT_EQ(s.restarts("trainer-0"), 0);
  s.stop_all();
}

}  // namespace
}  // namespace chessrl::tool

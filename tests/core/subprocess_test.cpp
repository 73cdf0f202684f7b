#include "chessrl/core/subprocess.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <string>
#include <vector>

#include "chessrl/core/uci_session.h"

namespace chessrl {
namespace {

using namespace std::chrono_literals;

TEST(Subprocess, EchoesLinesThroughCat) {
  auto proc = Subprocess::start({"cat"});
  ASSERT_TRUE(proc.ok()) << proc.error();
  ASSERT_TRUE(proc->write_line("hello"));
  ASSERT_TRUE(proc->write_line("world"));
  EXPECT_EQ(proc->read_line(5s), "hello");
  EXPECT_EQ(proc->read_line(5s), "world");
}

TEST(Subprocess, ReadTimesOutWhenChildIsSilent) {
  auto proc = Subprocess::start({"sleep", "5"});
  ASSERT_TRUE(proc.ok()) << proc.error();
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(proc->read_line(100ms).has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);
}

TEST(Subprocess, EndOfOutputGivesNullopt) {
  auto proc = Subprocess::start({"printf", "last line\\n"});
  ASSERT_TRUE(proc.ok()) << proc.error();
  EXPECT_EQ(proc->read_line(5s), "last line");
  EXPECT_FALSE(proc->read_line(5s).has_value());
}

TEST(Subprocess, EnvIsAddedAndReplacesOurs) {
  ::setenv("CHESSRL_SUBPROCESS_TEST", "ours", 1);
  auto proc = Subprocess::start({"env"}, {{"CHESSRL_SUBPROCESS_TEST", "the child's"},
                                          {"CHESSRL_SUBPROCESS_ADDED", "1"}});
  ::unsetenv("CHESSRL_SUBPROCESS_TEST");
  ASSERT_TRUE(proc.ok()) << proc.error();
  std::vector<std::string> ours;
  while (auto line = proc->read_line(5s))
    if (line->rfind("CHESSRL_SUBPROCESS_", 0) == 0) ours.push_back(*line);
  std::sort(ours.begin(), ours.end());
  EXPECT_EQ(ours, (std::vector<std::string>{"CHESSRL_SUBPROCESS_ADDED=1",
                                            "CHESSRL_SUBPROCESS_TEST=the child's"}));
}

TEST(Subprocess, MissingProgramIsAClearError) {
  auto proc = Subprocess::start({"chessrl-no-such-program"});
  ASSERT_FALSE(proc.ok());
  EXPECT_NE(proc.error().find("chessrl-no-such-program"), std::string::npos);
  EXPECT_FALSE(find_program("chessrl-no-such-program").has_value());
}

TEST(UciSession, ProgramThatExitsIsNotAnEngine) {
  // `true` exits at once: depending on timing the write of "uci" fails or the
  // reply never comes; either way the error says why.
  auto session = UciSession::start("true", 2s);
  ASSERT_FALSE(session.ok());
  EXPECT_NE(session.error().find("'true' is not a UCI engine"), std::string::npos)
      << session.error();
}

TEST(UciSession, ProgramThatNeverSaysUciokFailsHandshake) {
  // `cat` echoes "uci" back and never says "uciok".
  auto session = UciSession::start("cat", 300ms);
  ASSERT_FALSE(session.ok());
  EXPECT_NE(session.error().find("did not answer 'uci' with 'uciok'"), std::string::npos)
      << session.error();
}

TEST(UciSession, HandshakeWithStockfishNamesTheEngine) {
  auto session = UciSession::start("stockfish");
  ASSERT_TRUE(session.ok()) << "stockfish is a project dependency (deps/apt.txt): "
                            << session.error();
  EXPECT_EQ(session->name().rfind("Stockfish", 0), 0u) << session->name();
  EXPECT_TRUE(session->sync());
}


// Process: the one spawner's other face, a child whose output goes to a log.
class ProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("process-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string read(const std::string& name) const {
    std::ifstream in(dir_ / name);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  std::filesystem::path dir_;
};

TEST_F(ProcessTest, StdoutAndStderrAreAppendedToTheLog) {
  ProcessSpec spec;
  spec.argv = {"sh", "-c", "echo out; echo err >&2; exit 3"};
  spec.output_path = (dir_ / "a.log").string();
  std::ofstream(spec.output_path) << "before\n";
  auto p = Process::start(spec);
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_TRUE(p->wait_for(10s));
  EXPECT_EQ(p->status(), "exit status 3");
  EXPECT_EQ(p->exit_code(), 3);
  EXPECT_FALSE(p->clean_exit());
  EXPECT_EQ(read("a.log"), "before\nout\nerr\n");
  EXPECT_EQ(log_tail(spec.output_path, 2), "    out\n    err\n");
}

// Each way to start (posix_spawn; fork for a niceness or the parent-death
// signal) gives the child the environment, its own process group, stdin from
// /dev/null, and SIGINT not ignored even where ours is.
TEST_F(ProcessTest, BothWaysToStartSetTheSameThings) {
  ::signal(SIGINT, SIG_IGN);
  for (const bool fork_path : {false, true}) {
    SCOPED_TRACE(fork_path ? "fork" : "posix_spawn");
    ProcessSpec spec;
    spec.argv = {"sh", "-c",
                 "echo \"$CHESSRL_PROCESS_TEST\"; ps -o pgid= -p $$; "
                 "grep '^SigIgn' /proc/$$/status; cat"};
    spec.env = {{"CHESSRL_PROCESS_TEST", "given"}};
    spec.output_path = (dir_ / (fork_path ? "fork.log" : "spawn.log")).string();
    spec.null_stdin = true;
    spec.own_process_group = true;
    spec.die_with_parent = fork_path;
    auto p = Process::start(spec);
    ASSERT_TRUE(p.ok()) << p.error();
    ASSERT_TRUE(p->wait_for(10s)) << "cat read /dev/null to its end";
    EXPECT_TRUE(p->clean_exit()) << p->status();
    std::istringstream lines(read(fork_path ? "fork.log" : "spawn.log"));
    std::string env, pgid, sigign;
    std::getline(lines, env);
    lines >> pgid >> sigign >> sigign;  // "SigIgn: <mask>"
    EXPECT_EQ(env, "given");
    EXPECT_EQ(std::stoi(pgid), p->pid());
    // Bit 2 (SIGINT) of the ignored signals' mask.
    EXPECT_EQ(std::stoull(sigign, nullptr, 16) & (1ull << (SIGINT - 1)), 0u) << sigign;
  }
  ::signal(SIGINT, SIG_DFL);
}

TEST_F(ProcessTest, StopTerminatesThenKills) {
  ProcessSpec spec;
  spec.argv = {"sh", "-c", "trap '' TERM; echo ready; while :; do sleep 1; done"};
  spec.output_path = (dir_ / "stubborn.log").string();
  auto p = Process::start(spec);
  ASSERT_TRUE(p.ok()) << p.error();
  // The trap is set once it has said so.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (read("stubborn.log").empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(5ms);
  EXPECT_FALSE(p->stop(200ms)) << "it ignores SIGTERM";
  EXPECT_EQ(p->status(), "killed by SIGKILL");
  EXPECT_EQ(p->exit_code(), 128 + SIGKILL);

  spec.argv = {"sleep", "60"};
  auto q = Process::start(spec);
  ASSERT_TRUE(q.ok()) << q.error();
  EXPECT_TRUE(q->stop(10s));
  EXPECT_EQ(q->status(), "killed by SIGTERM");
}

TEST_F(ProcessTest, WhatCannotStartIsAnErrorNamingIt) {
  ProcessSpec spec;
  spec.argv = {"/nonexistent/program"};
  auto missing = Process::start(spec);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("/nonexistent/program"), std::string::npos) << missing.error();
  spec.argv = {"true"};
  spec.output_path = (dir_ / "no-such-dir" / "x.log").string();
  auto unwritable = Process::start(spec);
  ASSERT_FALSE(unwritable.ok());
  EXPECT_NE(unwritable.error().find("x.log"), std::string::npos) << unwritable.error();
  // Exec's own failure (a file marked executable that is not a program) on the fork path.
  const std::string script = (dir_ / "not-a-program").string();
  std::ofstream(script) << "\x7f" "ELF garbage";
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  spec.argv = {script};
  spec.output_path = "";
  spec.nice = 1;
  auto garbage = Process::start(spec);
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.error().find("Exec format error"), std::string::npos) << garbage.error();
}

TEST_F(ProcessTest, AChildAtANiceness) {
  ProcessSpec spec;
  spec.argv = {"nice"};  // coreutils' nice without arguments prints its niceness
  spec.output_path = (dir_ / "nice.log").string();
  spec.nice = 19;
  auto p = Process::start(spec);
  ASSERT_TRUE(p.ok()) << p.error();
  ASSERT_TRUE(p->wait_for(10s));
  EXPECT_EQ(read("nice.log"), "19\n");
}

// A log appended over many runs: the tail reads only its end, and still gives
// whole last lines.
TEST_F(ProcessTest, TheTailOfALongLogIsItsLastLines) {
  const std::string path = (dir_ / "long.log").string();
  {
    std::ofstream out(path);
    for (int i = 0; i < 200000; ++i) out << "line " << i << "\n";  // about 2.2 MB
  }
  EXPECT_EQ(log_tail(path, 2), "    line 199998\n    line 199999\n");
}

// A child reaped by the kernel (SIGCHLD ignored, as a parent may leave it for
// us across exec) has no status we saw: never reported as a clean exit.
TEST_F(ProcessTest, AChildReapedElsewhereIsNotACleanExit) {
  struct IgnoreSigchld {
    struct sigaction old {};
    IgnoreSigchld() {
      struct sigaction ignore {};
      ignore.sa_handler = SIG_IGN;
      ::sigaction(SIGCHLD, &ignore, &old);
    }
    ~IgnoreSigchld() { ::sigaction(SIGCHLD, &old, nullptr); }
  } ignore;
  ProcessSpec spec;
  spec.argv = {"sh", "-c", "exit 0"};
  auto p = Process::start(spec);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->wait(), -1);
  EXPECT_FALSE(p->clean_exit());
  EXPECT_EQ(p->status(), "exit status unknown (reaped elsewhere)");
}

}  // namespace
}  // namespace chessrl

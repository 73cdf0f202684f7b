#include "chessrl/core/subprocess.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
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

}  // namespace
}  // namespace chessrl

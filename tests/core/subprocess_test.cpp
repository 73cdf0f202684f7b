#include "chessrl/core/subprocess.h"

#include <gtest/gtest.h>

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

TEST(Subprocess, MissingProgramIsAClearError) {
  auto proc = Subprocess::start({"chessrl-no-such-program"});
  ASSERT_FALSE(proc.ok());
  EXPECT_NE(proc.error().find("chessrl-no-such-program"), std::string::npos);
  EXPECT_FALSE(find_program("chessrl-no-such-program").has_value());
}

TEST(UciSession, ProgramThatIsNotAnEngineFailsHandshake) {
  // `true` exits at once without ever saying uciok.
  auto session = UciSession::start("true", 2s);
  ASSERT_FALSE(session.ok());
  EXPECT_NE(session.error().find("uciok"), std::string::npos) << session.error();
}

}  // namespace
}  // namespace chessrl

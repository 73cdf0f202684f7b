// The UCI client against fake engines: small shell scripts written by the
// tests, each misbehaving in one way.
#include "chessrl/eval/uci_engine.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "chessrl/chess/notation.h"

namespace chessrl::eval {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

class FakeEngines : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/chessrl-eval-test-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A fake engine: logs every line it gets (and "started" once per process)
  // to <name>.log, answers the handshake, and does `on_go` when told to go.
  std::string engine(const std::string& name, const std::string& on_go,
                     const std::string& on_uci = "echo 'id name Fake'; echo uciok") {
    const std::string path = dir_ + "/" + name, log = path + ".log";
    std::ofstream(path) << "#!/bin/sh\n"
                        << "echo started >> '" << log << "'\n"
                        << "while read -r line; do\n"
                        << "  echo \"$line\" >> '" << log << "'\n"
                        << "  case \"$line\" in\n"
                        << "    uci) " << on_uci << " ;;\n"
                        << "    isready) echo readyok ;;\n"
                        << "    go*) " << on_go << " ;;\n"
                        << "    quit) exit 0 ;;\n"
                        << "  esac\n"
                        << "done\n";
    ::chmod(path.c_str(), 0755);
    return path;
  }
  std::string log_of(const std::string& name) {
    std::ifstream in(dir_ + "/" + name + ".log");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  int starts(const std::string& name) {
    std::istringstream in(log_of(name));
    int n = 0;
    for (std::string l; std::getline(in, l);) n += l == "started";
    return n;
  }
  static UciEngineOptions options(const std::string& program) {
    UciEngineOptions o;
    o.program = program;
    o.movetime_ms = 50;
    o.move_grace = milliseconds(300);
    o.start_timeout = milliseconds(2000);
    o.name = "fake";
    return o;
  }
  static GameState start_state() {
    GameState s;
    s.start_fen = std::string(chess::kStartFen);
    return s;
  }

  std::string dir_;
};

TEST_F(FakeEngines, PlaysItsBestmoveAndSendsTheProtocol) {
  auto o =
      options(engine("good", "echo 'info depth 1 score cp 20'; echo 'bestmove e7e5 ponder g1f3'"));
  o.options = {{"Skill Level", "0"}, {"Threads", "1"}};
  auto player = make_uci_player(o);
  ASSERT_TRUE(player.ok()) << player.error();
  EXPECT_EQ((*player)->name(), "fake");
  ASSERT_TRUE((*player)->new_game().ok());
  GameState s = start_state();
  const chess::Move e4 = chess::parse_uci(s.position, "e2e4").value_or_throw();
  s.position.make_move(e4);
  s.moves.push_back(e4);
  auto m = (*player)->choose(s);
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(chess::to_uci(*m), "e7e5");
  player->reset();  // quit
  const std::string log = log_of("good");
  EXPECT_NE(log.find("uci\nsetoption name Skill Level value 0\nsetoption name Threads value 1\n"
                     "isready\nucinewgame\nisready\n"),
            std::string::npos)
      << log;
  EXPECT_NE(
      log.find("position fen " + std::string(chess::kStartFen) + " moves e2e4\ngo movetime 50\n"),
      std::string::npos)
      << log;
  EXPECT_NE(log.find("quit"), std::string::npos) << log;
}

TEST_F(FakeEngines, NodeAndDepthLimits) {
  auto o = options(engine("limits", "echo 'bestmove e2e4'"));
  o.nodes = 1234;
  auto player = make_uci_player(o);
  ASSERT_TRUE(player.ok()) << player.error();
  ASSERT_TRUE((*player)->choose(start_state()).ok());
  o.nodes = 0;
  o.depth = 3;
  auto deep = make_uci_player(o);
  ASSERT_TRUE(deep.ok()) << deep.error();
  ASSERT_TRUE((*deep)->choose(start_state()).ok());
  player->reset();
  deep->reset();
  const std::string log = log_of("limits");
  EXPECT_NE(log.find("go nodes 1234\n"), std::string::npos) << log;
  EXPECT_NE(log.find("go depth 3\n"), std::string::npos) << log;
}

TEST_F(FakeEngines, SilentEngineTimesOutIsKilledAndRestarts) {
  // On go it becomes a process that ignores its input closing (same pid), so
  // only a kill ends it before Subprocess's own one-second grace.
  auto player = make_uci_player(options(engine("silent", "exec sleep 30")));
  ASSERT_TRUE(player.ok()) << player.error();
  const auto t0 = Clock::now();
  auto m = (*player)->choose(start_state());
  const double waited = seconds_since(t0);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find("engine fake did not answer 'go movetime 50' within"), std::string::npos)
      << m.error();
  EXPECT_GE(waited, 0.3);  // movetime 50 ms + grace 300 ms
  // Killed at the deadline (0.35 s), not after Subprocess's 1 s wait (1.35 s):
  // timing is the point, so this test runs alone (RUN_SERIAL, CMakeLists.txt).
  EXPECT_LT(waited, 1.2);
  // The engine is gone: moving fails at once, and new_game starts a fresh one.
  auto again = (*player)->choose(start_state());
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().find("not running"), std::string::npos) << again.error();
  EXPECT_EQ(starts("silent"), 1);
  ASSERT_TRUE((*player)->new_game().ok());
  EXPECT_EQ(starts("silent"), 2);
}

TEST_F(FakeEngines, CrashIsNoticedAtOnce) {
  auto o = options(engine("crash", "exit 3"));
  o.move_grace = milliseconds(60'000);
  auto player = make_uci_player(o);
  ASSERT_TRUE(player.ok()) << player.error();
  const auto t0 = Clock::now();
  auto m = (*player)->choose(start_state());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find("engine fake exited"), std::string::npos) << m.error();
  EXPECT_LT(seconds_since(t0), 20.0);  // long before the 60 s deadline, on a busy machine too
  ASSERT_TRUE((*player)->new_game().ok());
  EXPECT_EQ(starts("crash"), 2);
}

TEST_F(FakeEngines, IllegalOrMissingBestmoveFails) {
  auto illegal = make_uci_player(options(engine("illegal", "echo 'bestmove e2e5'")));
  ASSERT_TRUE(illegal.ok()) << illegal.error();
  auto m = (*illegal)->choose(start_state());
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find("engine fake answered illegal move 'e2e5'"), std::string::npos)
      << m.error();

  auto none = make_uci_player(options(engine("none", "echo 'bestmove (none)'")));
  ASSERT_TRUE(none.ok()) << none.error();
  auto n = (*none)->choose(start_state());
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.error().find("'bestmove (none)'"), std::string::npos) << n.error();
}

TEST_F(FakeEngines, HandshakeFailures) {
  auto o = options(engine("mute", "echo 'bestmove e2e4'", ":"));
  o.start_timeout = milliseconds(300);
  const auto t0 = Clock::now();
  auto mute = make_uci_player(o);
  ASSERT_FALSE(mute.ok());
  EXPECT_NE(mute.error().find("engine fake did not answer 'uci' within"), std::string::npos)
      << mute.error();
  EXPECT_LT(seconds_since(t0), 10.0);  // the 300 ms timeout ended it: a mute engine never answers

  auto gone = make_uci_player(options(dir_ + "/no-such-engine"));
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.error().find("cannot start engine fake"), std::string::npos) << gone.error();

  auto quits = make_uci_player(options(engine("quits", ":", "exit 0")));
  ASSERT_FALSE(quits.ok());
  EXPECT_NE(quits.error().find("engine fake exited"), std::string::npos) << quits.error();

  auto o2 = options(engine("nolimit", ":"));
  o2.movetime_ms = 0;
  auto nolimit = make_uci_player(o2);
  ASSERT_FALSE(nolimit.ok());
  EXPECT_NE(nolimit.error().find("no search limit"), std::string::npos) << nolimit.error();
}

TEST_F(FakeEngines, AnchorSpecStartsTheEngineInItsFactory) {
  const std::string path = engine("anchor", "echo 'bestmove d2d4'");
  auto factory = parse_anchor("uci:" + path + ";Hash=16;depth=2;name=my-engine", 1);
  ASSERT_TRUE(factory.ok()) << factory.error();
  EXPECT_EQ(starts("anchor"), 0);  // not started by parsing
  auto player = (*factory)();
  ASSERT_TRUE(player.ok()) << player.error();
  EXPECT_EQ((*player)->name(), "my-engine");
  auto m = (*player)->choose(start_state());
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(chess::to_uci(*m), "d2d4");
  player->reset();
  const std::string log = log_of("anchor");
  EXPECT_NE(log.find("setoption name Hash value 16\n"), std::string::npos) << log;
  EXPECT_NE(log.find("go depth 2\n"), std::string::npos) << log;
}

TEST(Anchor, ParsesBuiltInPlayers) {
  for (const std::string spec : {"random", "greedy"}) {
    auto factory = parse_anchor(spec, 3);
    ASSERT_TRUE(factory.ok()) << factory.error();
    auto a = (*factory)(), b = (*factory)();
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ((*a)->name(), spec);
  }
}

TEST(Anchor, ErrorsNameTheSpecAndThePart) {
  struct Case {
    std::string spec, expected;
  };
  const Case cases[] = {
      {"stockfish", "anchor 'stockfish': expected random, greedy or uci:PROGRAM"},
      {"", "anchor '': expected"},
      {"uci:", "anchor 'uci:': no program after 'uci:'"},
      {"uci: ;depth=1", "no program after 'uci:'"},
      {"uci:sf;nodes=abc", "anchor 'uci:sf;nodes=abc': nodes=abc is not a positive integer"},
      {"uci:sf;depth=0", "depth=0 is not a positive integer"},
      {"uci:sf;movetime=-5", "movetime=-5 is not a positive integer"},
      {"uci:sf;Skill Level", "'Skill Level' is not KEY=VALUE"},
      {"uci:sf;=3", "'=3' has no key"},
      {"uci:sf;depth=2;nodes=100", "at most one of nodes, depth and movetime"},
      {"uci:sf;name=!!", "name='!!' has no [a-zA-Z0-9_.-] characters"},
  };
  for (const Case& c : cases) {
    auto r = parse_anchor(c.spec, 1);
    ASSERT_FALSE(r.ok()) << c.spec;
    EXPECT_NE(r.error().find(c.expected), std::string::npos) << r.error();
  }
}

TEST(Anchor, Labels) {
  EXPECT_EQ(anchor_label("random"), "random");
  EXPECT_EQ(anchor_label("greedy"), "greedy");
  EXPECT_EQ(anchor_label("uci:stockfish;Skill Level=0;movetime=50"),
            "stockfish-SkillLevel0-movetime50");
  EXPECT_EQ(anchor_label("uci:/usr/games/stockfish;depth=1"), "stockfish-depth1");
  EXPECT_EQ(anchor_label("uci:stockfish"), "stockfish-movetime100");
  EXPECT_EQ(anchor_label("uci:stockfish;nodes=5000;name=sf 5k!"), "sf5k");
  EXPECT_EQ(anchor_label("uci:stockfish;Skill Level=0;name=sf-skill0"), "sf-skill0");
  EXPECT_EQ(anchor_label("not a spec?"), "notaspec");
}

}  // namespace
}  // namespace chessrl::eval

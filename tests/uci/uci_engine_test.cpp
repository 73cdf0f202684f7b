#include "chessrl/uci/uci_engine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../chess/chess_test_util.h"
#include "chessrl/chess/notation.h"
#include "chessrl/core/error.h"

namespace chessrl::uci {
namespace {

using namespace std::chrono_literals;
using chess::Position;

// An engine on the uniform fake backend writing to a string. The factory
// counts its calls and refuses the model "bad". Read the output only while
// no search runs.
class Harness {
 public:
  explicit Harness(std::string model = "") {
    UciEngineOptions options;
    options.name = "chessrl-test";
    options.model = std::move(model);
    options.backend_factory = [this](const std::string& m, int threads) {
      ++factory_calls;
      last_model = m;
      last_threads = threads;
      if (m == "bad") throw Error("cannot open 'bad'");
      return std::make_shared<nn::FakeBackend>(nn::FakeBackend::Mode::kUniform);
    };
    engine = std::make_unique<UciEngine>(std::move(options), out);
  }

  void send(std::string_view line) { EXPECT_TRUE(engine->handle(line)) << line; }

  std::vector<std::string> lines() const {
    std::vector<std::string> result;
    std::istringstream in(out.str());
    for (std::string line; std::getline(in, line);) result.push_back(line);
    return result;
  }
  // Lines written since the last call.
  std::vector<std::string> new_lines() {
    std::vector<std::string> all = lines();
    std::vector<std::string> fresh(all.begin() + std::ptrdiff_t(seen_), all.end());
    seen_ = all.size();
    return fresh;
  }

  std::ostringstream out;
  int factory_calls = 0;
  std::string last_model;
  int last_threads = -1;
  std::unique_ptr<UciEngine> engine;

 private:
  std::size_t seen_ = 0;
};

bool starts_with(const std::string& s, std::string_view prefix) { return s.rfind(prefix, 0) == 0; }

int count_prefix(const std::vector<std::string>& lines, std::string_view prefix) {
  int n = 0;
  for (const auto& l : lines) n += starts_with(l, prefix) ? 1 : 0;
  return n;
}

bool any_contains(const std::vector<std::string>& lines, std::string_view prefix,
                  std::string_view text) {
  for (const auto& l : lines)
    if (starts_with(l, prefix) && l.find(text) != std::string::npos) return true;
  return false;
}

std::optional<std::string> bestmove(const std::vector<std::string>& lines) {
  std::optional<std::string> move;
  for (const auto& l : lines) {
    if (starts_with(l, "bestmove ")) {
      std::istringstream in(l.substr(9));
      std::string m;
      in >> m;
      move = m;
    }
  }
  return move;
}

struct Info {
  long depth = -1, seldepth = -1, nodes = -1, nps = -1, time = -1;
  std::string score_kind;  // cp or mate
  long score = 0;
  bool has_wdl = false;
  long w = 0, d = 0, l = 0;
  std::vector<std::string> pv;
};

// Parses a search info line; records a failure for any unknown or malformed token.
std::optional<Info> parse_info(const std::string& line) {
  std::istringstream in(line);
  std::string token;
  in >> token;
  if (token != "info") {
    ADD_FAILURE() << "not an info line: " << line;
    return std::nullopt;
  }
  Info info;
  auto number = [&](long& v) {
    if (!(in >> v)) ADD_FAILURE() << "expected a number in: " << line;
  };
  while (in >> token) {
    if (token == "depth") {
      number(info.depth);
    } else if (token == "seldepth") {
      number(info.seldepth);
    } else if (token == "nodes") {
      number(info.nodes);
    } else if (token == "nps") {
      number(info.nps);
    } else if (token == "time") {
      number(info.time);
    } else if (token == "score") {
      in >> info.score_kind;
      if (info.score_kind != "cp" && info.score_kind != "mate")
        ADD_FAILURE() << "bad score kind in: " << line;
      number(info.score);
    } else if (token == "wdl") {
      info.has_wdl = true;
      number(info.w);
      number(info.d);
      number(info.l);
      EXPECT_EQ(info.w + info.d + info.l, 1000) << line;
      EXPECT_TRUE(info.w >= 0 && info.d >= 0 && info.l >= 0) << line;
    } else if (token == "pv") {
      while (in >> token) info.pv.push_back(token);
    } else {
      ADD_FAILURE() << "unknown token '" << token << "' in: " << line;
      return std::nullopt;
    }
  }
  EXPECT_GE(info.depth, 1) << line;
  EXPECT_GE(info.seldepth, info.depth) << line;
  EXPECT_GE(info.nodes, 1) << line;
  EXPECT_GE(info.nps, 0) << line;
  EXPECT_GE(info.time, 0) << line;
  EXPECT_FALSE(info.score_kind.empty()) << line;
  EXPECT_FALSE(info.pv.empty()) << line;
  return info;
}

// The search info lines (not info strings), parsed.
std::vector<Info> search_infos(const std::vector<std::string>& lines) {
  std::vector<Info> infos;
  for (const auto& l : lines) {
    if (starts_with(l, "info ") && !starts_with(l, "info string ")) {
      if (auto info = parse_info(l)) infos.push_back(*info);
    }
  }
  return infos;
}

bool legal_in(const Position& pos, const std::string& move) {
  return static_cast<bool>(chess::parse_uci(pos, move));
}

Position after(std::string_view moves) {
  Position pos;
  chess::testing::play(pos, moves);
  return pos;
}

TEST(UciEngine, ScriptedSessionIsWellFormed) {
  Harness h;
  h.send("uci");
  h.send("isready");
  h.send("ucinewgame");
  h.send("position startpos moves e2e4 e7e5");
  h.send("go nodes 200");
  h.engine->wait();
  EXPECT_FALSE(h.engine->handle("quit"));
  EXPECT_FALSE(h.engine->handle("isready"));  // nothing after quit

  const auto lines = h.lines();
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0], "id name chessrl-test");
  EXPECT_EQ(count_prefix(lines, "uciok"), 1);
  EXPECT_EQ(count_prefix(lines, "readyok"), 1);
  EXPECT_EQ(count_prefix(lines, "option name "), 6);
  EXPECT_EQ(count_prefix(lines, "bestmove "), 1);
  const auto infos = search_infos(lines);
  ASSERT_FALSE(infos.empty());
  EXPECT_GE(infos.back().nodes, 200);
  EXPECT_TRUE(infos.back().has_wdl);
  EXPECT_EQ(infos.back().score_kind, "cp");
  const Position pos = after("e2e4 e7e5");
  const auto best = bestmove(lines);
  ASSERT_TRUE(best);
  EXPECT_TRUE(legal_in(pos, *best)) << *best;
  EXPECT_EQ(infos.back().pv.front(), *best);
  // The principal variation is a legal line.
  Position line = pos;
  for (const auto& m : infos.back().pv) {
    auto move = chess::parse_uci(line, m);
    ASSERT_TRUE(move) << m;
    line.make_move(*move);
  }
  EXPECT_EQ(lines.back().rfind("bestmove ", 0), 0u);
}

TEST(UciEngine, OptionNamesAreCaseInsensitiveAndWdlCanBeHidden) {
  Harness h;
  h.send("setoption name uci_showwdl value false");
  h.send("setoption name MINIBATCHSIZE value 4");
  h.send("setoption name cpuct value 2.5");
  h.send("position startpos");
  h.send("go nodes 60");
  h.engine->wait();
  const auto lines = h.lines();
  const auto infos = search_infos(lines);
  ASSERT_FALSE(infos.empty());
  EXPECT_FALSE(infos.back().has_wdl);
  EXPECT_EQ(count_prefix(lines, "info string unknown option"), 0);
  EXPECT_EQ(count_prefix(lines, "info string option"), 0);
}

TEST(UciEngine, BadOptionValuesAreReported) {
  Harness h;
  h.send("setoption name Nodes value abc");
  h.send("setoption name MinibatchSize value 0");
  h.send("setoption name CPuct value -1");
  h.send("setoption name UCI_ShowWDL value maybe");
  h.send("setoption name NoSuchOption value 3");
  h.send("setoption");
  h.send("setoption name");
  h.send("setoption value 3");
  const auto lines = h.lines();
  EXPECT_EQ(count_prefix(lines, "info string "), 8);
  EXPECT_TRUE(any_contains(lines, "info string ", "NoSuchOption"));
  EXPECT_TRUE(any_contains(lines, "info string ", "'abc'"));
}

TEST(UciEngine, NodesOptionLimitsAPlainGo) {
  Harness h;
  h.send("setoption name Nodes value 77");
  h.send("position startpos");
  h.send("go");
  h.engine->wait();
  const auto infos = search_infos(h.lines());
  ASSERT_FALSE(infos.empty());
  EXPECT_GE(infos.back().nodes, 77);
  EXPECT_LT(infos.back().nodes, 77 + 64);  // at most one round past the limit
}

TEST(UciEngine, GoInfiniteRunsUntilStop) {
  Harness h;
  h.send("position startpos");
  h.send("go infinite");
  std::this_thread::sleep_for(150ms);
  EXPECT_TRUE(h.engine->searching());
  h.send("isready");      // answered during the search
  h.send("go nodes 10");  // ignored: a search runs
  h.send("stop");
  EXPECT_FALSE(h.engine->searching());
  const auto lines = h.lines();
  EXPECT_EQ(count_prefix(lines, "readyok"), 1);
  EXPECT_EQ(count_prefix(lines, "bestmove "), 1);
  EXPECT_TRUE(any_contains(lines, "info string ", "go ignored"));
  const auto best = bestmove(lines);
  ASSERT_TRUE(best);
  EXPECT_TRUE(legal_in(Position(), *best));
  h.send("stop");  // no search: nothing happens
  EXPECT_EQ(count_prefix(h.lines(), "bestmove "), 1);
}

TEST(UciEngine, GoInfiniteWaitsForStopEvenWhenProven) {
  Harness h;
  h.send("position fen 6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1");
  h.send("go infinite");
  std::this_thread::sleep_for(300ms);
  EXPECT_TRUE(h.engine->searching());
  h.send("stop");
  const auto lines = h.lines();
  EXPECT_EQ(bestmove(lines), "a1a8");
}

TEST(UciEngine, MovetimeEndsByItself) {
  Harness h;
  h.send("position startpos moves d2d4");
  const auto start = std::chrono::steady_clock::now();
  h.send("go movetime 200");
  h.engine->wait();
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_GE(elapsed, 150ms);
  EXPECT_LT(elapsed, 10s);
  const auto best = bestmove(h.lines());
  ASSERT_TRUE(best);
  EXPECT_TRUE(legal_in(after("d2d4"), *best));
}

TEST(UciEngine, InfoLinesComeAboutOnceASecond) {
  Harness h;
  h.send("position startpos");
  // 1.5 s: half a second from either edge (the first info at 1 s, a second one
  // due at 2 s), so a thread held up by a busy machine still prints exactly two.
  h.send("go movetime 1500");
  h.engine->wait();
  const auto infos = search_infos(h.lines());
  ASSERT_EQ(infos.size(), 2u);  // one after a second, one at the end
  EXPECT_GE(infos[0].time, 1000);
  EXPECT_LE(infos[0].nodes, infos[1].nodes);
  EXPECT_GT(infos[1].nps, 0);
}

TEST(UciEngine, ClockBasedGoEnds) {
  Harness h;
  h.send("position startpos");
  const auto start = std::chrono::steady_clock::now();
  h.send("go wtime 1000 btime 1000");
  h.engine->wait();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  h.send("position startpos moves e2e4");
  h.send("go wtime 60000 btime 30 winc 0 binc 0 movestogo 5");  // black nearly out of time
  h.engine->wait();
  h.send("go btime -20 wtime 100");
  h.engine->wait();
  const auto lines = h.lines();
  EXPECT_EQ(count_prefix(lines, "bestmove "), 3);
  EXPECT_EQ(count_prefix(lines, "info string "), 1);  // only the network line
}

TEST(UciEngine, FindsMateInOne) {
  Harness h;
  h.send("position fen 6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1");
  h.send("go nodes 2000");
  h.engine->wait();
  const auto lines = h.lines();
  EXPECT_EQ(bestmove(lines), "a1a8");
  const auto infos = search_infos(lines);
  ASSERT_FALSE(infos.empty());
  EXPECT_EQ(infos.back().score_kind, "mate");
  EXPECT_EQ(infos.back().score, 1);
  EXPECT_EQ(infos.back().w, 1000);
}

TEST(UciEngine, ReportsBeingMated) {
  Harness h;
  // Black's only move is Kg8, and Ra8 mates.
  h.send("position fen 7k/R7/6K1/8/8/8/8/8 b - - 0 1");
  h.send("go nodes 3000");
  h.engine->wait();
  const auto lines = h.lines();
  EXPECT_EQ(bestmove(lines), "h8g8");
  const auto infos = search_infos(lines);
  ASSERT_FALSE(infos.empty());
  EXPECT_EQ(infos.back().score_kind, "mate");
  EXPECT_EQ(infos.back().score, -1);
}

TEST(UciEngine, IllegalMoveLeavesThePositionUnchanged) {
  Harness h;
  h.send("position startpos moves e2e4");
  h.send("position startpos moves e2e4 e7e5 e1e5");
  h.send("position startpos moves e2e4 e7e5 xyz");
  h.send("position fen 8/8/8 w - - 0 1 moves e2e4");
  h.send("position startpos e2e4");
  h.send("go nodes 50");
  h.engine->wait();
  const auto lines = h.lines();
  EXPECT_TRUE(any_contains(lines, "info string ", "'e1e5'"));
  EXPECT_TRUE(any_contains(lines, "info string ", "'xyz'"));
  EXPECT_TRUE(any_contains(lines, "info string ", "bad FEN"));
  EXPECT_EQ(count_prefix(lines, "info string "), 5);  // four rejections and the network
  const auto best = bestmove(lines);
  ASSERT_TRUE(best);
  EXPECT_TRUE(legal_in(after("e2e4"), *best)) << *best;  // a move for black
}

TEST(UciEngine, GameOverGivesNullMove) {
  Harness h;
  h.send("position fen R5k1/5ppp/8/8/8/8/8/6K1 b - - 0 1");  // black is mated
  h.send("go nodes 10");
  EXPECT_FALSE(h.engine->searching());
  h.send("position fen 7k/5Q2/6K1/8/8/8/8/8 b - - 0 1");  // stalemate
  h.send("go infinite");
  EXPECT_FALSE(h.engine->searching());
  const auto lines = h.lines();
  EXPECT_EQ(count_prefix(lines, "bestmove 0000"), 2);
  EXPECT_TRUE(any_contains(lines, "info string ", "checkmate"));
  EXPECT_TRUE(any_contains(lines, "info string ", "stalemate"));
}

TEST(UciEngine, ReusesTheTreeAlongPlayedMoves) {
  Harness h;
  h.send("position startpos");
  h.send("go nodes 2000");
  h.engine->wait();
  // The subtree under e2e4 already has visits: a search for 1 visit keeps them.
  h.send("position startpos moves e2e4");
  h.send("go nodes 1");
  h.engine->wait();
  auto infos = search_infos(h.new_lines());
  ASSERT_FALSE(infos.empty());
  EXPECT_GT(infos.back().nodes, 10);
  // A new game starts a new tree.
  h.send("ucinewgame");
  h.send("position startpos moves e2e4");
  h.send("go nodes 1");
  h.engine->wait();
  infos = search_infos(h.new_lines());
  ASSERT_FALSE(infos.empty());
  EXPECT_EQ(infos.back().nodes, 1);
}

TEST(UciEngine, PositionDuringSearchStopsItFirst) {
  Harness h;
  h.send("position startpos");
  h.send("go infinite");
  std::this_thread::sleep_for(50ms);
  h.send("position startpos moves g1f3");
  EXPECT_FALSE(h.engine->searching());
  auto lines = h.lines();
  EXPECT_EQ(count_prefix(lines, "bestmove "), 1);
  EXPECT_TRUE(legal_in(Position(), *bestmove(lines)));
  h.send("go nodes 30");
  h.engine->wait();
  lines = h.lines();
  EXPECT_EQ(count_prefix(lines, "bestmove "), 2);
  EXPECT_TRUE(legal_in(after("g1f3"), *bestmove(lines)));
}

TEST(UciEngine, SetoptionThreadsAndModelRemakeTheNetwork) {
  Harness h;
  h.send("isready");
  EXPECT_EQ(h.factory_calls, 1);
  EXPECT_EQ(h.last_model, "");
  h.send("setoption name Threads value 3");
  h.send("isready");
  EXPECT_EQ(h.factory_calls, 2);
  EXPECT_EQ(h.last_threads, 3);
  h.send("setoption name threads value 3");  // unchanged: nothing to remake
  h.send("isready");
  EXPECT_EQ(h.factory_calls, 2);
  h.send("setoption name Model value bad");
  h.send("isready");
  EXPECT_EQ(h.factory_calls, 3);
  EXPECT_EQ(h.last_model, "bad");
  h.send("position startpos");
  h.send("go nodes 50");  // still plays, with the previous network
  h.engine->wait();
  EXPECT_EQ(h.factory_calls, 3);
  auto lines = h.lines();
  EXPECT_TRUE(any_contains(lines, "info string ", "'bad'"));
  EXPECT_TRUE(any_contains(lines, "info string ", "keeping the previous network"));
  const auto best = bestmove(lines);
  ASSERT_TRUE(best);
  EXPECT_TRUE(legal_in(Position(), *best));
  h.send("setoption name Model value nets/with space.ckpt");
  h.send("go nodes 20");  // the network is made at go too
  h.engine->wait();
  EXPECT_EQ(h.factory_calls, 4);
  EXPECT_EQ(h.last_model, "nets/with space.ckpt");
  EXPECT_EQ(h.last_threads, 3);
  h.send("setoption name Model value <empty>");
  h.send("isready");
  EXPECT_EQ(h.factory_calls, 5);
  EXPECT_EQ(h.last_model, "");
}

TEST(UciEngine, WithoutAnyNetworkGoAnswersNullMove) {
  Harness h("bad");
  h.send("isready");
  h.send("position startpos");
  h.send("go nodes 10");
  EXPECT_FALSE(h.engine->searching());
  const auto lines = h.lines();
  EXPECT_EQ(count_prefix(lines, "readyok"), 1);
  EXPECT_EQ(bestmove(lines), "0000");
  EXPECT_EQ(h.factory_calls, 1);  // a failed load is not retried until the settings change
}

TEST(UciEngine, MalformedCommandsAreReportedNotFatal) {
  Harness h;
  for (const char* line :
       {"go nodes abc", "go nodes", "go movetime -5", "go foo", "position", "position fen",
        "position fen rnbqkbnr/pppppppp", "position middlegame", "frobnicate", "   ",
        "setoption name", "debug on", "register later", "ponderhit"}) {
    h.send(line);
  }
  h.send("xyzzy isready");  // UCI: unknown leading tokens are skipped
  EXPECT_FALSE(h.engine->searching());
  const auto lines = h.lines();
  EXPECT_EQ(count_prefix(lines, "bestmove"), 0);
  EXPECT_EQ(count_prefix(lines, "readyok"), 1);
  EXPECT_GE(count_prefix(lines, "info string "), 11);
  EXPECT_TRUE(any_contains(lines, "info string ", "'frobnicate'"));
}

TEST(UciEngine, SurvivesRandomInput) {
  Harness h;
  std::mt19937_64 rng(12345);
  // Random bytes.
  for (int i = 0; i < 3000; ++i) {
    std::string line(std::size_t(rng() % 80), ' ');
    for (char& c : line) c = char(rng() % 256);
    EXPECT_TRUE(h.engine->handle(line));
  }
  // Random sentences from the protocol's own words (searches start and stop).
  const std::vector<std::string> words = {"go",
                                          "position",
                                          "startpos",
                                          "fen",
                                          "moves",
                                          "e2e4",
                                          "e7e5",
                                          "g1f3",
                                          "e2e5",
                                          "nodes",
                                          "5",
                                          "-3",
                                          "abc",
                                          "movetime",
                                          "10",
                                          "wtime",
                                          "btime",
                                          "winc",
                                          "movestogo",
                                          "0",
                                          "infinite",
                                          "setoption",
                                          "name",
                                          "value",
                                          "Nodes",
                                          "MinibatchSize",
                                          "CPuct",
                                          "stop",
                                          "isready",
                                          "ucinewgame",
                                          "8/8/8/8/8/8/8/8",
                                          "w",
                                          "-",
                                          "1",
                                          "UCI_ShowWDL",
                                          "uci",
                                          "depth"};
  const std::vector<std::string> commands = {
      "go", "position startpos", "position fen", "setoption", "stop", "isready", "ucinewgame"};
  for (int i = 0; i < 600; ++i) {
    std::string line = commands[rng() % commands.size()] + " ";
    const int n = int(rng() % 6);
    for (int k = 0; k < n; ++k) line += words[rng() % words.size()] + " ";
    EXPECT_TRUE(h.engine->handle(line)) << line;
  }
  h.send("stop");
  h.send("isready");
  const auto lines = h.lines();
  EXPECT_EQ(lines.back(), "readyok");
  EXPECT_GT(count_prefix(lines, "bestmove "), 5) << "the sentences should run searches";
  for (const auto& l : lines) {
    for (char c : l) {
      const auto u = static_cast<unsigned char>(c);
      EXPECT_TRUE(u >= 0x20 && u < 0x7f) << "unprintable output in: " << l;
      if (u < 0x20 || u >= 0x7f) {
        break;
      }
    }
  }
}

TEST(UciEngine, RunReadsUntilEndOfInput) {
  Harness h;
  std::istringstream in("uci\nisready\nposition startpos moves e2e4\ngo infinite\n");
  h.engine->run(in);  // end of input stops the search
  const auto lines = h.lines();
  EXPECT_EQ(count_prefix(lines, "uciok"), 1);
  EXPECT_EQ(count_prefix(lines, "bestmove "), 1);
}

TEST(UciEngine, QuitStopsTheSearchAndPrintsItsMove) {
  Harness h;
  std::istringstream in("position startpos\ngo infinite\nquit\nisready\n");
  h.engine->run(in);
  const auto lines = h.lines();
  EXPECT_EQ(count_prefix(lines, "bestmove "), 1);
  EXPECT_EQ(count_prefix(lines, "readyok"), 0);
}

}  // namespace
}  // namespace chessrl::uci

// Differential test against stockfish: positions reached by seeded random play
// (plus hand-picked tricky ones), perft at depth 3 compared move by move with
// stockfish's `go perft 3`. stockfish is a project dependency (deps/apt.txt);
// its absence is a failure, not a skip.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

#include "chessrl/chess/movegen.h"
#include "chessrl/chess/notation.h"
#include "chessrl/core/uci_session.h"

namespace chessrl::chess {
namespace {

constexpr int kRandomPositions = 1000;
constexpr int kDepth = 3;

// Positions with en-passant pins, discovered checks, promotions with check and
// castling through attacks, where generators commonly go wrong.
const char* const kTrickyFens[] = {
    "8/8/8/2k5/2pP4/8/B7/4K3 b - d3 0 3",
    "8/8/1k6/2b5/2pP4/8/5K2/8 b - d3 0 1",
    "8/8/1k6/8/2pP4/8/5BK1/8 b - d3 0 1",
    "8/5bk1/8/2Pp4/8/1K6/8/8 w - d6 0 1",
    "K1k5/8/P7/8/8/8/8/8 w - - 0 1",
    "8/k1P5/8/1K6/8/8/8/8 w - - 0 1",
    "8/P1k5/K7/8/8/8/8/8 w - - 0 1",
    "r3k2r/1b4bq/8/8/8/8/7B/R3K2R w KQkq - 0 1",
    "r3k2r/8/3Q4/8/8/5q2/8/R3K2R b KQkq - 0 1",
    "2K2r2/4P3/8/8/8/8/8/3k4 w - - 0 1",
    "8/8/2k5/5q2/5n2/8/5K2/8 b - - 0 1",
    "4k3/1P6/8/8/8/8/K7/8 w - - 0 1",
    "3k4/3p4/8/K1P4r/8/8/8/8 b - - 0 1",
    "8/8/4k3/8/2p5/8/B2P2K1/8 w - - 0 1",
    "n1n5/PPPk4/8/8/8/8/4Kppp/5N1N b - - 0 1",
    "k7/8/8/3pP3/8/8/8/4K2R w K d6 0 1",
    "4k3/8/8/K2pP2r/8/8/8/8 w - d6 0 1",
};

std::map<std::string, std::uint64_t> stockfish_divide(UciSession& sf, const std::string& fen) {
  sf.send("position fen " + fen);
  EXPECT_TRUE(sf.sync()) << "stockfish stopped answering after position fen " << fen;
  sf.send("go perft " + std::to_string(kDepth));
  auto lines =
      sf.read_until([](const std::string& l) { return l.rfind("Nodes searched:", 0) == 0; },
                    std::chrono::seconds(60));
  std::map<std::string, std::uint64_t> result;
  if (!lines) {
    ADD_FAILURE() << "stockfish gave no perft result for " << fen;
    return result;
  }
  for (const auto& l : *lines) {
    auto colon = l.find(": ");
    if (colon == std::string::npos || l.rfind("Nodes", 0) == 0) continue;
    result[l.substr(0, colon)] = std::stoull(l.substr(colon + 2));
  }
  return result;
}

std::map<std::string, std::uint64_t> our_divide(const std::string& fen) {
  Position pos = Position::from_fen(fen).value_or_throw();
  std::map<std::string, std::uint64_t> result;
  for (const auto& [move, nodes] : perft_divide(pos, kDepth)) result[to_uci(move)] = nodes;
  return result;
}

// Seeded random play from the start position: a spread of openings,
// middlegames and endgames with every kind of special move along the way.
std::vector<std::string> random_positions(int count, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::string> fens;
  while (int(fens.size()) < count) {
    Position pos;
    const int plies = std::uniform_int_distribution<int>(1, 160)(rng);
    for (int i = 0; i < plies; ++i) {
      MoveList moves = legal_moves(pos);
      if (moves.empty()) break;
      pos.make_move(moves[std::uniform_int_distribution<int>(0, moves.size() - 1)(rng)]);
    }
    fens.push_back(pos.fen());
  }
  return fens;
}

class StockfishDiff : public ::testing::Test {
 protected:
  void SetUp() override {
    auto session = UciSession::start("stockfish");
    ASSERT_TRUE(session.ok()) << "stockfish is required (scripts/install-deps.sh installs it): "
                              << session.error();
    sf_.emplace(std::move(session).value());
  }
  void compare(const std::string& fen) {
    auto theirs = stockfish_divide(*sf_, fen);
    auto ours = our_divide(fen);
    EXPECT_EQ(ours, theirs) << "perft " << kDepth << " divide differs for " << fen;
  }
  std::optional<UciSession> sf_;
};

TEST_F(StockfishDiff, TrickyPositionsMatchMoveByMove) {
  for (const char* fen : kTrickyFens) compare(fen);
}

TEST_F(StockfishDiff, RandomPlayPositionsMatchMoveByMove) {
  for (const auto& fen : random_positions(kRandomPositions, 20261122)) compare(fen);
}

}  // namespace
}  // namespace chessrl::chess

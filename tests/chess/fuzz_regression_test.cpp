// Inputs the fuzzers (fuzz/, docs/fuzzing.md) found crashing or breaking a
// property, replayed as plain tests. The same inputs are in the seed corpus
// (tests/fuzz/corpus/fen/regression-*), which the fuzz_corpus.fen test runs
// through the fuzz target itself.
#include <gtest/gtest.h>

#include <string>

#include "chess_test_util.h"
#include "chessrl/chess/movegen.h"
#include "chessrl/chess/notation.h"
#include "chessrl/chess/position.h"

namespace chessrl::chess {
namespace {

using testing::from_fen;

void expect_fen_error(const std::string& fen, const std::string& words) {
  auto parsed = Position::from_fen(fen);
  ASSERT_FALSE(parsed.ok()) << fen << " parsed";
  EXPECT_NE(parsed.error().find(words), std::string::npos) << parsed.error();
}

// Found by fuzz_fen: from_fen took any material, and this position has 271
// legal moves; generating them wrote past the end of a 256-move MoveList (a
// stack overflow, reachable through a pushed game's start_fen).
TEST(FuzzRegression, MaterialNoGameReachesIsRefused) {
  expect_fen_error("QQQQQQBk/Q5RB/Q6Q/Q6Q/Q6Q/Q6Q/Q6Q/KQQQQQQQ w - - 0 1",
                   "white pieces beyond the starting set");
  expect_fen_error("k7/8/8/8/8/pppppppp/p7/K7 w - - 0 1", "9 black pawns, more than 8");
  // Three knights need a promotion, so a missing pawn.
  expect_fen_error("k7/8/8/8/8/NNN5/PPPPPPPP/K7 w - - 0 1",
                   "1 white pieces beyond the starting set but only 0 white pawns missing");
  EXPECT_TRUE(Position::from_fen("k7/8/8/8/8/NNN5/PPPPPPP1/K7 w - - 0 1").ok());
}

// The most legal moves a chess position can have; nine queens, no pawns.
TEST(FuzzRegression, MoveListHoldsTheMostLegalMoves) {
  const Position pos = from_fen("R6R/3Q4/1Q4Q1/4Q3/2Q4Q/Q4Q2/pp1Q4/kBNN1KB1 w - - 0 1");
  EXPECT_EQ(legal_moves(pos).size(), 218);
  EXPECT_EQ(count_legal(pos), 218);
  static_assert(MoveList::kCapacity >= 8 + 2 + 9 * 27 + 2 * 14 + 2 * 13 + 2 * 8);
}

// Found by fuzz_fen: after a move from a FEN whose counters were at the
// six-digit limit, fen() wrote 1000000, which from_fen refuses. Replay turned
// such positions into training FENs the trainer could not read.
TEST(FuzzRegression, FenOfAPositionPlayedFromTheCounterLimitParses) {
  Position pos =
      from_fen("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 999999 999999");
  pos.make_move(parse_uci(pos, "e1d1").value_or_throw());
  pos.make_move(parse_uci(pos, "e8d8").value_or_throw());
  EXPECT_EQ(pos.halfmove_clock(), 1000001);
  const std::string fen = pos.fen();
  EXPECT_EQ(fen, "r2k3r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R2K3R w - - 999999 999999");
  EXPECT_TRUE(Position::from_fen(fen).ok());
}

}  // namespace
}  // namespace chessrl::chess

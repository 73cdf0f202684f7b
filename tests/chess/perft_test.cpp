// Perft of the six standard positions to depth 4 (pos3 to 5): every rule of
// move generation (castling, en passant, promotions, pins, evasions) shows up
// in these counts.
#include <gtest/gtest.h>

#include "chessrl/chess/movegen.h"
#include "chessrl/chess/notation.h"
#include "perft_data.h"

namespace chessrl::chess {
namespace {

using testing::perft_cases;

class PerftTest : public ::testing::TestWithParam<testing::PerftCase> {};

TEST_P(PerftTest, MatchesReferenceCountsToDepth4) {
  const auto& c = GetParam();
  Position pos = Position::from_fen(c.fen).value_or_throw();
  const std::string fen_before = pos.fen();
  const int max_depth = std::string(c.name) == "pos3" ? 5 : 4;
  for (int depth = 1; depth <= max_depth; ++depth)
    EXPECT_EQ(perft(pos, depth), c.nodes[depth - 1]) << c.name << " depth " << depth;
  EXPECT_EQ(pos.fen(), fen_before) << "perft must leave the position unchanged";
}

TEST_P(PerftTest, DivideSumsToPerftAndCountMatchesList) {
  const auto& c = GetParam();
  Position pos = Position::from_fen(c.fen).value_or_throw();
  std::uint64_t sum = 0;
  for (const auto& [move, nodes] : perft_divide(pos, 3)) {
    EXPECT_TRUE(is_legal(pos, move)) << to_uci(move);
    sum += nodes;
  }
  EXPECT_EQ(sum, c.nodes[2]);
  EXPECT_EQ(count_legal(pos), legal_moves(pos).size());
  EXPECT_EQ(std::uint64_t(count_legal(pos)), c.nodes[0]);
}

INSTANTIATE_TEST_SUITE_P(StandardPositions, PerftTest, ::testing::ValuesIn(perft_cases()),
                         testing::PerftCaseName());

TEST(Perft, DepthZeroIsOneNode) {
  Position pos;
  EXPECT_EQ(perft(pos, 0), 1u);
}

// count_legal and generate_legal are separate instantiations of one generator:
// they must agree on every node of a tree full of special moves.
TEST(Perft, CounterAgreesWithListOnEveryNode) {
  Position pos = Position::from_fen(perft_cases()[1].fen).value_or_throw();
  int checked = 0;
  for (Move a : legal_moves(pos)) {
    pos.make_move(a);
    for (Move b : legal_moves(pos)) {
      pos.make_move(b);
      ASSERT_EQ(count_legal(pos), legal_moves(pos).size()) << pos.fen();
      ++checked;
      pos.unmake_move();
    }
    pos.unmake_move();
  }
  EXPECT_EQ(checked, 2039);
}

}  // namespace
}  // namespace chessrl::chess

// Every reference perft count, to the deepest depth listed (billions of nodes
// for the start position and kiwipete): label `slow`.
#include <gtest/gtest.h>

#include "../perft_data.h"
#include "chessrl/chess/movegen.h"

namespace chessrl::chess {
namespace {

class PerftDeepTest : public ::testing::TestWithParam<testing::PerftCase> {};

TEST_P(PerftDeepTest, MatchesReferenceAtFullDepth) {
  const auto& c = GetParam();
  Position pos = Position::from_fen(c.fen).value_or_throw();
  for (int depth = 5; depth <= int(c.nodes.size()); ++depth)
    EXPECT_EQ(perft(pos, depth), c.nodes[depth - 1]) << c.name << " depth " << depth;
}

INSTANTIATE_TEST_SUITE_P(StandardPositions, PerftDeepTest,
                         ::testing::ValuesIn(testing::perft_cases()), testing::PerftCaseName());

}  // namespace
}  // namespace chessrl::chess

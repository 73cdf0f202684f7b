#include "chessrl/nn/policy_map.h"

#include <gtest/gtest.h>

#include <set>

#include "../chess/chess_test_util.h"
#include "chessrl/chess/movegen.h"
#include "chessrl/chess/notation.h"
#include "nn_test_util.h"

namespace chessrl::nn {
namespace {

using chess::Move;
using chess::MoveKind;
using chess::Position;
using chess::testing::from_fen;

int index_of(const char* fen, const char* uci) {
  Position pos = from_fen(fen);
  return policy_index(chess::parse_uci(pos, uci).value_or_throw(), pos.side_to_move());
}

TEST(PolicyMap, KnownIndices) {
  const char* start = chess::kStartFen.data();
  EXPECT_EQ(index_of(start, "e2e4"), (0 * 7 + 1) * 64 + chess::kE2) << "north, distance 2";
  EXPECT_EQ(index_of(start, "g1f3"), (56 + 7) * 64 + chess::kG1) << "knight (-1,+2)";
  EXPECT_EQ(index_of(start, "b1c3"), (56 + 0) * 64 + chess::kB1) << "knight (+1,+2)";
  // Black's e7e5 is the same move as white's e2e4 once the board is flipped.
  EXPECT_EQ(index_of("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1", "e7e5"),
            (0 * 7 + 1) * 64 + chess::kE2);
  // Castling is the king's two-square move east or west.
  EXPECT_EQ(index_of("4k3/8/8/8/8/8/8/R3K2R w KQ - 0 1", "e1g1"), (2 * 7 + 1) * 64 + chess::kE1);
  EXPECT_EQ(index_of("4k3/8/8/8/8/8/8/R3K2R w KQ - 0 1", "e1c1"), (6 * 7 + 1) * 64 + chess::kE1);
  // Promotions: a queen is a plain queen-like move, underpromotions have planes 64..72.
  const char* promo = "1n2k3/P7/8/8/8/8/8/4K3 w - - 0 1";
  EXPECT_EQ(index_of(promo, "a7a8q"), 0 * 64 + chess::kA7);
  EXPECT_EQ(index_of(promo, "a7a8n"), (64 + 3 * 1 + 0) * 64 + chess::kA7);
  EXPECT_EQ(index_of(promo, "a7b8r"), (64 + 3 * 2 + 2) * 64 + chess::kA7);
  EXPECT_EQ(index_of(promo, "a7b8b"), (64 + 3 * 2 + 1) * 64 + chess::kA7);
  EXPECT_EQ(index_of(promo, "a7b8q"), (1 * 7 + 0) * 64 + chess::kA7) << "north-east, distance 1";
}

// 1858 indices name a move some piece can make: 1456 queen-like, 336 knight
// and 66 underpromotion moves (lc0's policy size); the rest point off the board.
TEST(PolicyMap, DecodableIndicesAreTheMovesOfAnEmptyBoard) {
  for (chess::Color mover : {chess::kWhite, chess::kBlack}) {
    int decodable = 0;
    for (int i = 0; i < kPolicySize; ++i) {
      auto d = decode_policy_index(i, mover);
      if (!d) continue;
      ++decodable;
      EXPECT_TRUE(chess::is_ok(d->from) && chess::is_ok(d->to) && d->from != d->to) << i;
    }
    EXPECT_EQ(decodable, 1858);
  }
  EXPECT_FALSE(decode_policy_index(-1, chess::kWhite));
  EXPECT_FALSE(decode_policy_index(kPolicySize, chess::kWhite));
}

// move -> index -> move is exact for every legal move of thousands of positions,
// and no two legal moves of a position share an index.
TEST(PolicyMap, EveryLegalMoveRoundTrips) {
  auto positions = testing::random_positions(3, 3000);
  for (const char* fen :
       {"1n2k3/P7/8/8/8/8/8/4K3 w - - 0 1", "4k3/8/8/8/8/8/p7/1N2K3 b - - 0 1",
        "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", "r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1",
        "rnbqkbnr/1pp1pppp/p7/3pP3/8/8/PPPP1PPP/RNBQKBNR w KQkq d6 0 3",
        "4k3/8/8/8/3pP3/8/8/4K3 b - e3 0 1"})
    positions.push_back(from_fen(fen));
  int moves_checked = 0, underpromotions = 0, castles = 0, en_passant = 0;
  for (const Position& pos : positions) {
    std::set<int> seen;
    for (Move m : chess::legal_moves(pos)) {
      const int index = policy_index(m, pos.side_to_move());
      ASSERT_GE(index, 0);
      ASSERT_LT(index, kPolicySize);
      EXPECT_TRUE(seen.insert(index).second) << pos.fen() << " " << chess::to_uci(m);
      auto back = move_from_policy_index(pos, index);
      ASSERT_TRUE(back.has_value()) << pos.fen() << " " << chess::to_uci(m);
      EXPECT_EQ(*back, m) << pos.fen() << " " << chess::to_uci(m) << " came back as "
                          << chess::to_uci(*back);
      auto decoded = decode_policy_index(index, pos.side_to_move());
      ASSERT_TRUE(decoded.has_value());
      EXPECT_EQ(decoded->from, m.from());
      EXPECT_EQ(decoded->to, m.to());
      ++moves_checked;
      underpromotions += m.kind() == MoveKind::kPromotion && m.promotion() != chess::kQueen;
      castles += m.kind() == MoveKind::kCastling;
      en_passant += m.kind() == MoveKind::kEnPassant;
    }
  }
  EXPECT_GT(moves_checked, 50000);
  EXPECT_GT(underpromotions, 0);
  EXPECT_GT(castles, 0);
  EXPECT_GT(en_passant, 0);
}

// The colour-mirrored move in the colour-mirrored position has the same index.
TEST(PolicyMap, MirrorSymmetry) {
  for (const Position& pos : testing::random_positions(9, 300)) {
    Position mirrored = from_fen(testing::mirror_fen(pos.fen()));
    for (Move m : chess::legal_moves(pos)) {
      const Move mm = testing::mirror(m);
      ASSERT_TRUE(chess::is_legal(mirrored, mm)) << pos.fen() << " " << chess::to_uci(m);
      EXPECT_EQ(policy_index(m, pos.side_to_move()), policy_index(mm, mirrored.side_to_move()));
    }
  }
}

TEST(PolicyMap, IndexWithoutALegalMoveGivesNothing) {
  Position start;
  // e2e5 (north, distance 3) is on the board but not legal.
  EXPECT_FALSE(move_from_policy_index(start, (0 * 7 + 2) * 64 + chess::kE2).has_value());
  // h2, east: off the board.
  EXPECT_FALSE(move_from_policy_index(start, (2 * 7) * 64 + chess::kH2).has_value());
  // An underpromotion from a square not on the seventh rank.
  EXPECT_FALSE(move_from_policy_index(start, 64 * 64 + chess::kE2).has_value());
  EXPECT_FALSE(move_from_policy_index(start, -5).has_value());
}

}  // namespace
}  // namespace chessrl::nn

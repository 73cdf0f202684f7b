#include "chessrl/nn/encoding.h"

#include <gtest/gtest.h>

#include <array>
#include <string>

#include "../chess/chess_test_util.h"
#include "nn_test_util.h"

namespace chessrl::nn {
namespace {

using chess::Position;
using chess::testing::from_fen;
using chess::testing::play;
constexpr std::uint64_t kAll = ~std::uint64_t{0};

std::uint64_t flip(std::uint64_t b) { return __builtin_bswap64(b); }

// Reads a board back from step `step` of the planes: the piece on each square
// in absolute terms, given who was to move.
std::array<chess::Piece, 64> board_from_planes(const InputPlanes& in, int step,
                                               chess::Color mover) {
  std::array<chess::Piece, 64> board;
  board.fill(chess::kNoPiece);
  for (int side = 0; side < 2; ++side)
    for (int pt = 0; pt < 6; ++pt) {
      std::uint64_t b = in.masks[step * kPlanesPerStep + side * 6 + pt];
      if (mover == chess::kBlack) b = flip(b);
      const chess::Color c = side == 0 ? mover : ~mover;
      for (; b; b &= b - 1) {
        const int s = __builtin_ctzll(b);
        EXPECT_EQ(board[s], chess::kNoPiece) << "two pieces on square " << s;
        board[s] = chess::make_piece(c, chess::PieceType(pt));
      }
    }
  return board;
}

std::array<chess::Piece, 64> board_of(const Position& pos) {
  std::array<chess::Piece, 64> board;
  for (int s = 0; s < 64; ++s) board[s] = pos.piece_on(chess::Square(s));
  return board;
}

TEST(Encoding, StartPosition) {
  Position start;
  std::uint64_t key = 0;
  const InputPlanes in = encode(start, &key);
  EXPECT_EQ(in.masks[0], 0xFF00ULL) << "own pawns on rank 2";
  EXPECT_EQ(in.masks[6], 0xFF00ULL << 40) << "opponent pawns on rank 7";
  EXPECT_EQ(in.masks[5], 1ULL << chess::kE1) << "own king";
  EXPECT_EQ(in.masks[11], 1ULL << chess::kE8) << "opponent king";
  EXPECT_EQ(in.masks[12], 0u) << "no repetition";
  for (int p = kPlanesPerStep; p < kCastlingPlane; ++p)
    EXPECT_EQ(in.masks[p], 0u) << "no history, plane " << p;
  for (int p = kCastlingPlane; p < kCastlingPlane + 4; ++p)
    EXPECT_EQ(in.masks[p], kAll) << "castling plane " << p;
  EXPECT_EQ(in.masks[kBlackToMovePlane], 0u);
  EXPECT_EQ(in.masks[kRule50Plane], kAll);
  EXPECT_EQ(in.values[kRule50Plane], 0.0f);
  EXPECT_EQ(in.masks[kZerosPlane], 0u);
  EXPECT_EQ(in.masks[kOnesPlane], kAll);
  EXPECT_NE(key, 0u);
}

TEST(Encoding, BlackToMoveSeesTheBoardFromItsSide) {
  Position pos = from_fen("r3k2r/8/8/8/4P3/8/8/4K2R b Kkq e3 5 1");
  const InputPlanes in = encode(pos);
  // Black's king on e8 appears on e1, white's pawn on e4 on e5.
  EXPECT_EQ(in.masks[5], 1ULL << chess::kE1);
  EXPECT_EQ(in.masks[3], (1ULL << chess::kA1) | (1ULL << chess::kH1)) << "own rooks";
  EXPECT_EQ(in.masks[6], 1ULL << chess::kE5) << "white's pawn, flipped";
  EXPECT_EQ(in.masks[kCastlingPlane + 0], kAll) << "black may castle queenside";
  EXPECT_EQ(in.masks[kCastlingPlane + 1], kAll) << "black may castle kingside";
  EXPECT_EQ(in.masks[kCastlingPlane + 2], 0u) << "white may not castle queenside";
  EXPECT_EQ(in.masks[kCastlingPlane + 3], kAll) << "white may castle kingside";
  EXPECT_EQ(in.masks[kBlackToMovePlane], kAll);
  EXPECT_FLOAT_EQ(in.values[kRule50Plane], 0.05f);
}

TEST(Encoding, LeavesThePositionAsItWas) {
  for (Position pos : testing::random_positions(7, 200)) {
    const std::string fen = pos.fen();
    const auto key = pos.key();
    const int plies = pos.plies_played();
    const auto last = pos.last_move();
    (void)encode(pos);
    EXPECT_EQ(pos.fen(), fen);
    EXPECT_EQ(pos.key(), key);
    EXPECT_EQ(pos.plies_played(), plies);
    EXPECT_EQ(pos.last_move(), last);
    EXPECT_EQ(pos.compute_key(), pos.key());
  }
}

// Every history step decodes back to the board of the position that many plies
// ago, as the side to move now sees it.
TEST(Encoding, HistoryRoundTripsToTheEarlierBoards) {
  int checked = 0;
  for (Position pos : testing::random_positions(11, 150)) {
    const InputPlanes in = encode(pos);
    const chess::Color mover = pos.side_to_move();
    Position past = pos;
    for (int step = 0; step < kHistorySteps; ++step) {
      EXPECT_EQ(board_from_planes(in, step, mover), board_of(past))
          << pos.fen() << " step " << step;
      EXPECT_EQ(in.masks[step * kPlanesPerStep + 12] != 0, past.repetition_count() > 1);
      ++checked;
      if (past.plies_played() == 0) {
        for (int later = step + 1; later < kHistorySteps; ++later)
          for (int p = 0; p < kPlanesPerStep; ++p)
            EXPECT_EQ(in.masks[later * kPlanesPerStep + p], 0u)
                << "history before the first position";
        break;
      }
      past.unmake_move();
    }
    const bool white = mover == chess::kWhite;
    EXPECT_EQ(in.masks[kCastlingPlane + 1] != 0,
              pos.can_castle(white ? chess::kWhiteOO : chess::kBlackOO));
    EXPECT_EQ(in.masks[kCastlingPlane + 3] != 0,
              pos.can_castle(white ? chess::kBlackOO : chess::kWhiteOO));
    EXPECT_FLOAT_EQ(in.values[kRule50Plane], float(pos.halfmove_clock()) / 100.0f);
  }
  EXPECT_GT(checked, 800);
}

// A position and its colour-mirror (board flipped, colours swapped) look the
// same to the side to move: every plane but "black to move" is equal, with
// history too when the mirrored moves were played.
TEST(Encoding, ColourMirrorGivesTheSamePlanes) {
  std::mt19937 rng(5);
  for (int game = 0; game < 60; ++game) {
    Position pos;
    Position mirrored = from_fen(testing::mirror_fen(std::string(chess::kStartFen)));
    // The mirrored start has black to move; play the same random game on both.
    const int plies = std::uniform_int_distribution<int>(0, 80)(rng);
    for (int ply = 0; ply < plies; ++ply) {
      const chess::MoveList moves = chess::legal_moves(pos);
      if (moves.empty()) break;
      const chess::Move m = moves[std::uniform_int_distribution<int>(0, moves.size() - 1)(rng)];
      pos.make_move(m);
      mirrored.make_move(testing::mirror(m));
    }
    // Equal but for the move number (black moved first in the mirrored game).
    auto without_move_number = [](const std::string& fen) { return fen.substr(0, fen.rfind(' ')); };
    ASSERT_EQ(without_move_number(mirrored.fen()),
              without_move_number(testing::mirror_fen(pos.fen())));
    InputPlanes a = encode(pos), b = encode(mirrored);
    EXPECT_NE(a.masks[kBlackToMovePlane], b.masks[kBlackToMovePlane]);
    a.masks[kBlackToMovePlane] = b.masks[kBlackToMovePlane] = 0;
    EXPECT_EQ(a, b) << pos.fen();
  }
}

TEST(Encoding, RepetitionPlane) {
  Position pos;
  ASSERT_TRUE(play(pos, "g1f3 g8f6 f3g1 f6g8"));
  const InputPlanes in = encode(pos);
  EXPECT_EQ(in.masks[12], kAll) << "the start position occurs for the second time";
  EXPECT_EQ(in.masks[4 * kPlanesPerStep + 12], 0u) << "four plies ago it was new";
  EXPECT_EQ(in.masks[1 * kPlanesPerStep + 12], 0u);
}

TEST(Encoding, KeyCoversHistoryAndClock) {
  std::uint64_t k1, k2, k3, k4;
  Position a, b;
  ASSERT_TRUE(play(a, "g1f3 g8f6 b1c3"));
  ASSERT_TRUE(play(b, "b1c3 g8f6 g1f3"));  // same position, other history
  ASSERT_EQ(a.fen(), b.fen());
  (void)encode(a, &k1);
  (void)encode(b, &k2);
  EXPECT_NE(k1, k2);
  Position c;
  ASSERT_TRUE(play(c, "g1f3 g8f6 b1c3"));
  (void)encode(c, &k3);
  EXPECT_EQ(k1, k3);
  // The same board with another halfmove clock.
  Position d = from_fen("4k3/8/8/8/8/8/8/4K2R w K - 0 1");
  Position e = from_fen("4k3/8/8/8/8/8/8/4K2R w K - 30 1");
  (void)encode(d, &k3);
  (void)encode(e, &k4);
  EXPECT_NE(k3, k4);
}

TEST(Encoding, ExpandWritesEveryPlane) {
  Position pos = from_fen("r3k2r/8/8/8/4P3/8/8/4K2R b Kkq e3 37 1");
  const InputPlanes in = encode(pos);
  std::vector<float> out(kInputPlanes * 64, -1.0f);
  expand(in, out.data());
  for (int p = 0; p < kInputPlanes; ++p)
    for (int s = 0; s < 64; ++s) {
      const float want = (in.masks[p] >> s) & 1 ? in.values[p] : 0.0f;
      ASSERT_EQ(out[p * 64 + s], want) << "plane " << p << " square " << s;
    }
  EXPECT_FLOAT_EQ(out[kRule50Plane * 64 + 17], 0.37f);
  EXPECT_EQ(out[kOnesPlane * 64 + 63], 1.0f);
}

}  // namespace
}  // namespace chessrl::nn

// The chess feature planes (encoding.h, planes 112..131): hand-made positions
// with a piece en prise, a pin, a check and known attack counts, the same from
// black's side, and a cross-check of the attack, en-prise and checkers planes
// against the chess library's own attackers_to on random positions.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../chess/chess_test_util.h"
#include "chessrl/chess/bitboard.h"
#include "chessrl/chess/movegen.h"
#include "chessrl/chess/notation.h"
#include "chessrl/nn/encoding.h"
#include "nn_test_util.h"

namespace chessrl::nn {
namespace {

using chess::Bitboard;
using chess::Position;
using chess::testing::from_fen;
constexpr Bitboard kAll = ~Bitboard{0};

Bitboard bb(std::initializer_list<chess::Square> squares) {
  Bitboard b = 0;
  for (auto s : squares) b |= chess::square_bb(s);
  return b;
}

FeaturePlanes features_of(const std::string& fen) {
  Position pos = from_fen(fen);
  return chess_features(encode(pos));
}
Bitboard plane(const FeaturePlanes& f, int p) { return f.masks[size_t(p - kInputPlanes)]; }
float value(const FeaturePlanes& f, int p) { return f.values[size_t(p - kInputPlanes)]; }

// The mover's frame: squares flipped when black is to move.
Bitboard framed(Bitboard b, chess::Color mover) {
  return mover == chess::kWhite ? b : __builtin_bswap64(b);
}

TEST(Features, PlaneLayout) {
  EXPECT_EQ(kMaxInputPlanes, 132);
  EXPECT_EQ(kMaterialDifferencePlane, kMaxInputPlanes - 1);
  EXPECT_EQ(input_planes(NetworkConfig{}), kInputPlanes);
  NetworkConfig feat;
  feat.input_features = 1;
  EXPECT_EQ(input_planes(feat), kMaxInputPlanes);
}

TEST(Features, StartPositionAttacksAndMaterial) {
  const FeaturePlanes f = features_of(std::string(chess::kStartFen));
  using namespace chess;
  const Bitboard rank1_inner = kRank1 & ~bb({kA1, kH1});
  EXPECT_EQ(plane(f, kAttacksPlane + 0), rank1_inner | kRank2 | kRank3);
  // Rank 3 by two pawns (the a- and h-files by a pawn and a knight); d2 and
  // e2 by several pieces; every other square once.
  EXPECT_EQ(plane(f, kAttacksPlane + 1), kRank3 | bb({kD2, kE2}));
  EXPECT_EQ(plane(f, kAttacksPlane + 2), (rank1_inner << 56) | kRank7 | kRank6);
  EXPECT_EQ(plane(f, kAttacksPlane + 3), kRank6 | bb({kD7, kE7}));
  for (int p : {kEnPrisePlane, kEnPrisePlane + 1, kCheckersPlane, kPinnedPlane, kPinnedPlane + 1})
    EXPECT_EQ(plane(f, p), 0u) << "plane " << p;
  for (int side = 0; side < 2; ++side)
    for (int pt = 0; pt < 5; ++pt) {
      EXPECT_EQ(plane(f, kPieceCountPlane + side * 5 + pt), kAll);
      EXPECT_FLOAT_EQ(value(f, kPieceCountPlane + side * 5 + pt), 1.0f);
    }
  EXPECT_EQ(plane(f, kMaterialDifferencePlane), kAll);
  EXPECT_FLOAT_EQ(value(f, kMaterialDifferencePlane), 0.0f);
}

// A piece attacked and undefended, or attacked by a piece of lower value
// (defended or not), is en prise; material counts and difference.
TEST(Features, PiecesEnPriseAndMaterial) {
  using namespace chess;
  // The knight attacks the undefended pawn on d5.
  const FeaturePlanes f = features_of("4k3/q7/8/3p4/8/2N5/8/4K3 w - - 0 1");
  EXPECT_EQ(plane(f, kEnPrisePlane + 1), bb({kD5}));
  EXPECT_EQ(plane(f, kEnPrisePlane + 0), 0u) << "nothing attacks the knight";
  // Mover: one knight; opponent: a pawn and a queen.
  EXPECT_EQ(plane(f, kPieceCountPlane + kKnight), kAll);
  EXPECT_FLOAT_EQ(value(f, kPieceCountPlane + kKnight), 0.5f);
  EXPECT_EQ(plane(f, kPieceCountPlane + kPawn), 0u);
  EXPECT_FLOAT_EQ(value(f, kPieceCountPlane + 5 + kPawn), 1.0f / 8);
  EXPECT_FLOAT_EQ(value(f, kPieceCountPlane + 5 + kQueen), 1.0f);
  EXPECT_FLOAT_EQ(value(f, kMaterialDifferencePlane), (3.0f - 10.0f) / 10);

  // A pawn defended by a pawn, attacked by a knight: not en prise.
  EXPECT_EQ(plane(features_of("4k3/8/4p3/3p4/8/2N5/8/4K3 w - - 0 1"), kEnPrisePlane + 1), 0u);
  // A queen attacked by a knight: en prise though defended.
  EXPECT_EQ(plane(features_of("4k3/8/4p3/3q4/8/2N5/8/4K3 w - - 0 1"), kEnPrisePlane + 1),
            bb({kD5}));
  // The mover's rook, defended by its king: en prise to a bishop, not to a queen.
  EXPECT_EQ(plane(features_of("4k3/8/8/8/b7/8/8/3RK3 w - - 0 1"), kEnPrisePlane + 0), bb({kD1}));
  EXPECT_EQ(plane(features_of("4k3/8/8/8/q7/8/8/3RK3 w - - 0 1"), kEnPrisePlane + 0), 0u);
  // Undefended, it is en prise to the queen too.
  EXPECT_EQ(plane(features_of("4k3/8/8/8/q7/8/8/3R3K w - - 0 1"), kEnPrisePlane + 0), bb({kD1}));
}

TEST(Features, PinsAndChecks) {
  using namespace chess;
  // The rook on e7 pins the knight on e2 to its king; the knight is defended
  // by the king, so not en prise though the rook attacks it.
  FeaturePlanes f = features_of("4k3/4r3/8/8/8/8/4N3/4K3 w - - 0 1");
  EXPECT_EQ(plane(f, kPinnedPlane + 0), bb({kE2}));
  EXPECT_EQ(plane(f, kPinnedPlane + 1), 0u);
  EXPECT_EQ(plane(f, kCheckersPlane), 0u);
  EXPECT_EQ(plane(f, kEnPrisePlane + 0), 0u);
  // Two of the mover's pieces between: no pin.
  f = features_of("4k3/4r3/8/8/4B3/8/4N3/4K3 w - - 0 1");
  EXPECT_EQ(plane(f, kPinnedPlane + 0), 0u);
  // The opponent's knight pinned by the mover's rook.
  f = features_of("4k3/4n3/8/8/8/8/8/4R1K1 w - - 0 1");
  EXPECT_EQ(plane(f, kPinnedPlane + 1), bb({kE7}));
  EXPECT_EQ(plane(f, kPinnedPlane + 0), 0u);
  // A bishop's check, then a double check with a knight.
  f = features_of("4k3/8/8/8/1b6/8/8/4K3 w - - 0 1");
  EXPECT_EQ(plane(f, kCheckersPlane), bb({kB4}));
  f = features_of("4k3/8/8/8/1b6/5n2/8/4K3 w - - 0 1");
  EXPECT_EQ(plane(f, kCheckersPlane), bb({kB4, kF3}));
  // A pawn's check.
  f = features_of("4k3/8/8/8/8/8/3p4/4K3 w - - 0 1");
  EXPECT_EQ(plane(f, kCheckersPlane), bb({kD2}));
}

TEST(Features, BlackToMoveSeesTheMirror) {
  using namespace chess;
  // The pin and check of PinsAndChecks with colours swapped and black to move:
  // the planes are the same squares, in black's frame.
  FeaturePlanes f = features_of("4k3/4n3/8/8/8/8/4R3/4K3 b - - 0 1");
  EXPECT_EQ(plane(f, kPinnedPlane + 0), bb({kE2})) << "black's knight on e7, seen from black";
  f = features_of("4k3/3P4/8/8/8/8/8/4K3 b - - 0 1");
  EXPECT_EQ(plane(f, kCheckersPlane), bb({kD2})) << "white's pawn on d7 checks e8";
  for (const Position& pos : testing::random_positions(21, 100)) {
    const std::string fen = pos.fen();
    EXPECT_EQ(features_of(fen), features_of(testing::mirror_fen(fen))) << fen;
  }
}

// The planes against a square-by-square reference: Position::attackers_to
// and checkers(), in the mover's frame.
TEST(Features, AgreeWithTheChessLibrary) {
  using namespace chess;
  constexpr int kValue[6] = {1, 3, 3, 5, 9, 100};
  int pins = 0, en_prise = 0, checks = 0;
  for (Position pos : testing::random_positions(33, 300)) {
    const FeaturePlanes f = chess_features(encode(pos));
    const Color us = pos.side_to_move();
    const Bitboard occ = pos.pieces();
    Bitboard once[2] = {0, 0}, twice[2] = {0, 0}, prise[2] = {0, 0};
    for (int s = 0; s < 64; ++s) {
      const Square sq = Square(s);
      const Bitboard attackers = pos.attackers_to(sq, occ);
      for (int side = 0; side < 2; ++side) {
        const Bitboard by = attackers & pos.pieces(side == 0 ? us : ~us);
        if (by) once[side] |= square_bb(sq);
        if (popcount(by) >= 2) twice[side] |= square_bb(sq);
      }
      const Piece piece = pos.piece_on(sq);
      if (piece == kNoPiece || type_of(piece) == kKing) continue;
      const Color owner = color_of(piece);
      const Bitboard enemy = attackers & pos.pieces(~owner);
      if (!enemy) continue;
      int lowest = 1000;
      for (Bitboard b = enemy; b; b &= b - 1)
        lowest = std::min(lowest, kValue[type_of(pos.piece_on(lsb(b)))]);
      if (!(attackers & pos.pieces(owner)) || lowest < kValue[type_of(piece)])
        prise[owner == us ? 0 : 1] |= square_bb(sq);
    }
    EXPECT_EQ(plane(f, kAttacksPlane + 0), framed(once[0], us)) << pos.fen();
    EXPECT_EQ(plane(f, kAttacksPlane + 1), framed(twice[0], us)) << pos.fen();
    EXPECT_EQ(plane(f, kAttacksPlane + 2), framed(once[1], us)) << pos.fen();
    EXPECT_EQ(plane(f, kAttacksPlane + 3), framed(twice[1], us)) << pos.fen();
    EXPECT_EQ(plane(f, kEnPrisePlane + 0), framed(prise[0], us)) << pos.fen();
    EXPECT_EQ(plane(f, kEnPrisePlane + 1), framed(prise[1], us)) << pos.fen();
    EXPECT_EQ(plane(f, kCheckersPlane), framed(pos.checkers(), us)) << pos.fen();
    // A pinned piece may move only along its pin line: every legal move of a
    // piece on the plane stays on the line through its king.
    const Square king = pos.king_square(us);
    for (const Move m : legal_moves(pos)) {
      if (framed(plane(f, kPinnedPlane), us) & square_bb(m.from())) {
        EXPECT_TRUE(line(king, m.from()) & square_bb(m.to())) << pos.fen() << " " << to_uci(m);
      }
    }
    pins += popcount(plane(f, kPinnedPlane)) + popcount(plane(f, kPinnedPlane + 1));
    en_prise += popcount(prise[0] | prise[1]);
    checks += pos.in_check();
  }
  // The random positions exercise every plane.
  EXPECT_GT(pins, 5);
  EXPECT_GT(en_prise, 50);
  EXPECT_GT(checks, 5);
}

TEST(Features, ExpandAddsThemAfterTheClassicPlanes) {
  Position pos = from_fen("4k3/4r3/8/8/8/8/4N3/4K3 w - - 7 1");
  const InputPlanes in = encode(pos);
  std::vector<float> classic(kInputPlanes * 64), all(kMaxInputPlanes * 64, -1.0f);
  expand(in, classic.data());
  expand(in, all.data(), kMaxInputPlanes);
  EXPECT_TRUE(std::equal(classic.begin(), classic.end(), all.begin()));
  const FeaturePlanes f = chess_features(in);
  for (int p = 0; p < kFeaturePlanes; ++p)
    for (int s = 0; s < 64; ++s) {
      const float want = (f.masks[size_t(p)] >> s) & 1 ? f.values[size_t(p)] : 0.0f;
      ASSERT_EQ(all[size_t((kInputPlanes + p) * 64 + s)], want) << "plane " << p << " square " << s;
    }
  EXPECT_EQ(all[size_t(kPinnedPlane * 64 + chess::kE2)], 1.0f);
}

}  // namespace
}  // namespace chessrl::nn

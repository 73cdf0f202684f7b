// Attack tables: the fast slider lookups against the ray-walking reference,
// the between/line tables, and leaper attack counts.
#include "chessrl/chess/bitboard.h"

#include <gtest/gtest.h>

#include <random>

namespace chessrl::chess {
namespace {

Bitboard squares(std::initializer_list<Square> list) {
  Bitboard b = 0;
  for (Square s : list) b |= square_bb(s);
  return b;
}

TEST(Bitboard, SliderAttacksMatchReferenceForRandomOccupancies) {
  std::mt19937_64 rng(0xC0FFEE);
  for (int si = 0; si < 64; ++si) {
    const Square s = Square(si);
    for (int i = 0; i < 1500; ++i) {
      // Dense, medium and sparse boards; the slider's own square may be set or not.
      Bitboard occ = rng();
      if (i % 3 >= 1) occ &= rng();
      if (i % 3 == 2) occ &= rng();
      if (i % 2) occ |= square_bb(s);
      ASSERT_EQ(bishop_attacks(s, occ), sliding_attacks_reference(kBishop, s, occ))
          << "square " << si << " occupancy " << occ;
      ASSERT_EQ(rook_attacks(s, occ), sliding_attacks_reference(kRook, s, occ))
          << "square " << si << " occupancy " << occ;
      ASSERT_EQ(queen_attacks(s, occ), sliding_attacks_reference(kQueen, s, occ))
          << "square " << si << " occupancy " << occ;
      ASSERT_EQ(attacks(kQueen, s, occ), queen_attacks(s, occ));
    }
    // The empty and the full board.
    EXPECT_EQ(rook_attacks(s, 0), sliding_attacks_reference(kRook, s, 0));
    EXPECT_EQ(bishop_attacks(s, 0), sliding_attacks_reference(kBishop, s, 0));
    EXPECT_EQ(rook_attacks(s, ~Bitboard{0}), sliding_attacks_reference(kRook, s, ~Bitboard{0}));
    EXPECT_EQ(bishop_attacks(s, ~Bitboard{0}), sliding_attacks_reference(kBishop, s, ~Bitboard{0}));
    EXPECT_EQ(popcount(rook_attacks(s, 0)), 14);
  }
}

TEST(Bitboard, ReferenceSlidersStopAtTheFirstBlocker) {
  // Rook on d4, blockers on d6 and f4: d5, d6 north; e4, f4 east; full south and west.
  const Bitboard occ = squares({kD6, kF4, kB2});
  EXPECT_EQ(rook_attacks(kD4, occ), squares({kD5, kD6, kE4, kF4, kD3, kD2, kD1, kC4, kB4, kA4}));
  // Bishop on d4 with a blocker on b2: c3, b2 south-west.
  EXPECT_EQ(bishop_attacks(kD4, occ),
            squares({kC3, kB2, kE5, kF6, kG7, kH8, kE3, kF2, kG1, kC5, kB6, kA7}));
}

TEST(Bitboard, BetweenAndLine) {
  EXPECT_EQ(between(kA1, kH8), squares({kB2, kC3, kD4, kE5, kF6, kG7}));
  EXPECT_EQ(between(kH8, kA1), between(kA1, kH8));
  EXPECT_EQ(between(kA1, kA8), squares({kA2, kA3, kA4, kA5, kA6, kA7}));
  EXPECT_EQ(between(kE1, kH1), squares({kF1, kG1}));
  EXPECT_EQ(between(kE4, kE5), 0u);  // adjacent
  EXPECT_EQ(between(kA1, kB3), 0u);  // not aligned
  EXPECT_EQ(between(kC1, kH6), squares({kD2, kE3, kF4, kG5}));

  EXPECT_EQ(line(kA1, kH8), squares({kA1, kB2, kC3, kD4, kE5, kF6, kG7, kH8}));
  EXPECT_EQ(line(kC3, kE5), line(kA1, kH8));
  EXPECT_EQ(line(kB4, kF4), rank_bb(3));
  EXPECT_EQ(line(kD2, kD7), file_bb(3));
  EXPECT_EQ(line(kA1, kB3), 0u);
  EXPECT_EQ(line(kH1, kA8), squares({kH1, kG2, kF3, kE4, kD5, kC6, kB7, kA8}));

  EXPECT_TRUE(aligned(kA1, kH8, kD4));
  EXPECT_TRUE(aligned(kB2, kD4, kH8));  // beyond both ends
  EXPECT_FALSE(aligned(kA1, kH8, kD5));
  EXPECT_FALSE(aligned(kA1, kB3, kC5));
}

TEST(Bitboard, BetweenIsSubsetOfLineForAllPairs) {
  for (int a = 0; a < 64; ++a) {
    for (int b = 0; b < 64; ++b) {
      const Square sa = Square(a), sb = Square(b);
      EXPECT_EQ(between(sa, sb) & ~line(sa, sb), 0u);
      EXPECT_EQ(between(sa, sb), between(sb, sa));
      EXPECT_EQ(line(sa, sb), line(sb, sa));
      if (a != b && line(sa, sb)) {
        // Aligned: a queen on a sees b on an otherwise empty board, and the squares
        // between are exactly where a queen on a and a queen on b both attack along the line.
        EXPECT_TRUE(queen_attacks(sa, 0) & square_bb(sb));
        EXPECT_EQ(between(sa, sb), queen_attacks(sa, square_bb(sb)) &
                                       queen_attacks(sb, square_bb(sa)) & line(sa, sb));
      } else if (a != b) {
        EXPECT_FALSE(queen_attacks(sa, 0) & square_bb(sb));
      }
    }
  }
}

TEST(Bitboard, LeaperAttackCounts) {
  EXPECT_EQ(popcount(knight_attacks(kA1)), 2);
  EXPECT_EQ(popcount(knight_attacks(kH8)), 2);
  EXPECT_EQ(popcount(knight_attacks(kB1)), 3);
  EXPECT_EQ(popcount(knight_attacks(kB2)), 4);
  EXPECT_EQ(popcount(knight_attacks(kD4)), 8);
  EXPECT_EQ(popcount(knight_attacks(kE5)), 8);
  EXPECT_EQ(knight_attacks(kA1), squares({kB3, kC2}));
  EXPECT_EQ(knight_attacks(kG1), squares({kE2, kF3, kH3}));

  EXPECT_EQ(popcount(king_attacks(kA1)), 3);
  EXPECT_EQ(popcount(king_attacks(kH8)), 3);
  EXPECT_EQ(popcount(king_attacks(kA4)), 5);
  EXPECT_EQ(popcount(king_attacks(kE4)), 8);
  EXPECT_EQ(king_attacks(kH1), squares({kG1, kG2, kH2}));

  EXPECT_EQ(pawn_attacks(kWhite, kA2), square_bb(kB3));
  EXPECT_EQ(pawn_attacks(kWhite, kH2), square_bb(kG3));
  EXPECT_EQ(pawn_attacks(kWhite, kE4), squares({kD5, kF5}));
  EXPECT_EQ(pawn_attacks(kBlack, kE4), squares({kD3, kF3}));
  EXPECT_EQ(pawn_attacks(kBlack, kH7), square_bb(kG6));
  EXPECT_EQ(pawn_attacks(kWhite, kE8), 0u);
  EXPECT_EQ(pawn_attacks(kBlack, kE1), 0u);

  int knight_total = 0, king_total = 0;
  for (int s = 0; s < 64; ++s) {
    knight_total += popcount(knight_attacks(Square(s)));
    king_total += popcount(king_attacks(Square(s)));
  }
  EXPECT_EQ(knight_total, 336);  // 168 knight-move pairs, each counted both ways
  EXPECT_EQ(king_total, 420);
}

TEST(Bitboard, ShiftsDropBitsThatLeaveTheBoard) {
  EXPECT_EQ(shift<kEast>(kFileH), 0u);
  EXPECT_EQ(shift<kWest>(kFileA), 0u);
  EXPECT_EQ(shift<kNorth>(kRank8), 0u);
  EXPECT_EQ(shift<kSouth>(kRank1), 0u);
  EXPECT_EQ(shift<kNorthEast>(square_bb(kH4)), 0u);
  EXPECT_EQ(shift<kSouthWest>(square_bb(kA4)), 0u);
  EXPECT_EQ(shift<kNorthWest>(square_bb(kE4)), square_bb(kD5));
  EXPECT_EQ(shift<kSouthEast>(square_bb(kE4)), square_bb(kF3));
  EXPECT_EQ(pawn_attacks_bb<kWhite>(kRank2), kRank3);
  EXPECT_EQ(popcount(kDarkSquares), 32);
  EXPECT_TRUE(kDarkSquares & square_bb(kA1));
  EXPECT_TRUE(kLightSquares & square_bb(kH1));
}

TEST(Bitboard, BitHelpers) {
  Bitboard b = squares({kC2, kA7, kH8});
  EXPECT_EQ(popcount(b), 3);
  EXPECT_TRUE(more_than_one(b));
  EXPECT_FALSE(more_than_one(square_bb(kE4)));
  EXPECT_FALSE(more_than_one(0));
  EXPECT_EQ(lsb(b), kC2);
  EXPECT_EQ(pop_lsb(b), kC2);
  EXPECT_EQ(pop_lsb(b), kA7);
  EXPECT_EQ(pop_lsb(b), kH8);
  EXPECT_EQ(b, 0u);
}

}  // namespace
}  // namespace chessrl::chess

// Bitboard constants and attack tables. The tables are filled once, before
// main(), by a static initializer in bitboard.cpp; after that everything here is
// read-only and thread-safe. Slider attacks use PEXT where the build targets a
// CPU with BMI2, and fancy magic bitboards otherwise.
#pragma once

#include <bit>
#include <cassert>

#if defined(__BMI2__)
#include <immintrin.h>
#endif

#include "chessrl/chess/types.h"

namespace chessrl::chess {

constexpr Bitboard kFileA = 0x0101010101010101ULL;
constexpr Bitboard kFileH = kFileA << 7;
constexpr Bitboard kRank1 = 0xFFULL;
constexpr Bitboard kRank2 = kRank1 << 8;
constexpr Bitboard kRank3 = kRank1 << 16;
constexpr Bitboard kRank4 = kRank1 << 24;
constexpr Bitboard kRank5 = kRank1 << 32;
constexpr Bitboard kRank6 = kRank1 << 40;
constexpr Bitboard kRank7 = kRank1 << 48;
constexpr Bitboard kRank8 = kRank1 << 56;
constexpr Bitboard kDarkSquares = 0xAA55AA55AA55AA55ULL;
constexpr Bitboard kLightSquares = ~kDarkSquares;

constexpr Bitboard file_bb(int file) { return kFileA << file; }
constexpr Bitboard rank_bb(int rank) { return kRank1 << (8 * rank); }

inline int popcount(Bitboard b) { return std::popcount(b); }
// Preconditions: b != 0.
inline Square lsb(Bitboard b) {
  assert(b);
  return Square(std::countr_zero(b));
}
inline Square pop_lsb(Bitboard& b) {
  Square s = lsb(b);
  b &= b - 1;
  return s;
}
inline bool more_than_one(Bitboard b) { return b & (b - 1); }

enum Direction : int {
  kNorth = 8,
  kSouth = -8,
  kEast = 1,
  kWest = -1,
  kNorthEast = 9,
  kNorthWest = 7,
  kSouthEast = -7,
  kSouthWest = -9
};

// Moves every bit one step in direction D, dropping bits that leave the board.
template <Direction D>
constexpr Bitboard shift(Bitboard b) {
  if constexpr (D == kNorth)
    return b << 8;
  else if constexpr (D == kSouth)
    return b >> 8;
  else if constexpr (D == kEast)
    return (b & ~kFileH) << 1;
  else if constexpr (D == kWest)
    return (b & ~kFileA) >> 1;
  else if constexpr (D == kNorthEast)
    return (b & ~kFileH) << 9;
  else if constexpr (D == kNorthWest)
    return (b & ~kFileA) << 7;
  else if constexpr (D == kSouthEast)
    return (b & ~kFileH) >> 7;
  else
    return (b & ~kFileA) >> 9;
}

constexpr Direction pawn_push(Color c) { return c == kWhite ? kNorth : kSouth; }

// Squares attacked by pawns of colour C on the squares of b.
template <Color C>
constexpr Bitboard pawn_attacks_bb(Bitboard b) {
  return C == kWhite ? shift<kNorthWest>(b) | shift<kNorthEast>(b)
                     : shift<kSouthWest>(b) | shift<kSouthEast>(b);
}

namespace detail {

struct SliderTable {
  Bitboard mask;      // relevant occupancy (board edges excluded)
  Bitboard magic;     // used only without BMI2
  Bitboard* attacks;  // into the shared attack array
  unsigned shift;     // 64 - popcount(mask)

  unsigned index(Bitboard occupied) const {
#if defined(__BMI2__)
    return unsigned(_pext_u64(occupied, mask));
#else
    return unsigned(((occupied & mask) * magic) >> shift);
#endif
  }
};

struct Tables {
  Bitboard pawn_attacks[2][64];
  Bitboard knight_attacks[64];
  Bitboard king_attacks[64];
  Bitboard between[64][64];  // squares strictly between two aligned squares, else 0
  Bitboard line[64][64];     // the whole line through two aligned squares, else 0
  SliderTable bishop[64];
  SliderTable rook[64];
};
extern Tables tables;

}  // namespace detail

inline Bitboard pawn_attacks(Color c, Square s) { return detail::tables.pawn_attacks[c][s]; }
inline Bitboard knight_attacks(Square s) { return detail::tables.knight_attacks[s]; }
inline Bitboard king_attacks(Square s) { return detail::tables.king_attacks[s]; }
inline Bitboard bishop_attacks(Square s, Bitboard occupied) {
  const auto& t = detail::tables.bishop[s];
  return t.attacks[t.index(occupied)];
}
inline Bitboard rook_attacks(Square s, Bitboard occupied) {
  const auto& t = detail::tables.rook[s];
  return t.attacks[t.index(occupied)];
}
inline Bitboard queen_attacks(Square s, Bitboard occupied) {
  return bishop_attacks(s, occupied) | rook_attacks(s, occupied);
}
// Attacks of a non-pawn piece type from s.
inline Bitboard attacks(PieceType pt, Square s, Bitboard occupied) {
  switch (pt) {
    case kKnight:
      return knight_attacks(s);
    case kBishop:
      return bishop_attacks(s, occupied);
    case kRook:
      return rook_attacks(s, occupied);
    case kQueen:
      return queen_attacks(s, occupied);
    case kKing:
      return king_attacks(s);
    default:
      assert(false);
      return 0;
  }
}
inline Bitboard between(Square a, Square b) { return detail::tables.between[a][b]; }
inline Bitboard line(Square a, Square b) { return detail::tables.line[a][b]; }
inline bool aligned(Square a, Square b, Square c) { return line(a, b) & square_bb(c); }

// Slow ray-walking slider attacks: the reference the fast tables are tested against.
Bitboard sliding_attacks_reference(PieceType pt, Square s, Bitboard occupied);

}  // namespace chessrl::chess

// Basic chess types: colours, pieces, squares, moves. Plain enums and constexpr
// helpers with no state; safe to use from any thread.
#pragma once

#include <cstdint>

namespace chessrl::chess {

using Bitboard = std::uint64_t;
using Key = std::uint64_t;

enum Color : std::uint8_t { kWhite, kBlack };
constexpr Color operator~(Color c) { return Color(c ^ 1); }

enum PieceType : std::uint8_t { kPawn, kKnight, kBishop, kRook, kQueen, kKing, kNoPieceType };

// Piece = colour * 8 + type; kNoPiece marks an empty square.
// clang-format off
enum Piece : std::uint8_t {
  kWhitePawn = 0, kWhiteKnight, kWhiteBishop, kWhiteRook, kWhiteQueen, kWhiteKing,
  kBlackPawn = 8, kBlackKnight, kBlackBishop, kBlackRook, kBlackQueen, kBlackKing,
  kNoPiece = 16
};
constexpr Piece make_piece(Color c, PieceType pt) { return Piece((c << 3) | pt); }
constexpr PieceType type_of(Piece p) { return PieceType(p & 7); }
constexpr Color color_of(Piece p) { return Color(p >> 3); }

// Squares a1 = 0, b1 = 1, ..., h8 = 63.
enum Square : std::uint8_t {
  kA1, kB1, kC1, kD1, kE1, kF1, kG1, kH1,
  kA2, kB2, kC2, kD2, kE2, kF2, kG2, kH2,
  kA3, kB3, kC3, kD3, kE3, kF3, kG3, kH3,
  kA4, kB4, kC4, kD4, kE4, kF4, kG4, kH4,
  kA5, kB5, kC5, kD5, kE5, kF5, kG5, kH5,
  kA6, kB6, kC6, kD6, kE6, kF6, kG6, kH6,
  kA7, kB7, kC7, kD7, kE7, kF7, kG7, kH7,
  kA8, kB8, kC8, kD8, kE8, kF8, kG8, kH8,
  kNoSquare = 64
};
// clang-format on
constexpr int file_of(Square s) { return s & 7; }
constexpr int rank_of(Square s) { return s >> 3; }
constexpr Square make_square(int file, int rank) { return Square(rank * 8 + file); }
constexpr bool is_ok(Square s) { return s < 64; }
// The same square seen from `c`'s side (a1 <-> a8 for black).
constexpr Square relative_square(Color c, Square s) { return Square(s ^ (c * 56)); }
constexpr int relative_rank(Color c, int rank) { return rank ^ (c * 7); }
constexpr Bitboard square_bb(Square s) { return Bitboard{1} << s; }

// Castling rights, one bit each.
enum CastlingRights : std::uint8_t {
  kNoCastling = 0,
  kWhiteOO = 1,
  kWhiteOOO = 2,
  kBlackOO = 4,
  kBlackOOO = 8,
  kAllCastling = 15
};

// A move in 16 bits: from (0-5), to (6-11), promotion piece type - knight
// (12-13), kind (14-15). Castling is encoded as the king's two-square move
// (e1g1), as in UCI for standard chess.
enum class MoveKind : std::uint8_t { kNormal = 0, kPromotion = 1, kEnPassant = 2, kCastling = 3 };

class Move {
 public:
  constexpr Move() = default;
  constexpr Move(Square from, Square to, MoveKind kind = MoveKind::kNormal,
                 PieceType promotion = kKnight)
      : data_(std::uint16_t(from | (to << 6) | ((promotion - kKnight) << 12) | (int(kind) << 14))) {
  }
  static constexpr Move none() { return Move(); }

  constexpr Square from() const { return Square(data_ & 63); }
  constexpr Square to() const { return Square((data_ >> 6) & 63); }
  constexpr MoveKind kind() const { return MoveKind(data_ >> 14); }
  // Meaningful only when kind() == kPromotion.
  constexpr PieceType promotion() const { return PieceType(((data_ >> 12) & 3) + kKnight); }
  constexpr std::uint16_t raw() const { return data_; }
  constexpr bool is_none() const { return data_ == 0; }

  constexpr bool operator==(const Move&) const = default;

 private:
  std::uint16_t data_ = 0;
};

}  // namespace chessrl::chess

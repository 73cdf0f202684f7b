#include "chessrl/replay/move_codec.h"

#include "chessrl/chess/movegen.h"

namespace chessrl::replay {

namespace {

constexpr std::uint32_t kSquares = 64;
constexpr std::uint32_t kToScale = 64;
constexpr std::uint32_t kPromotionScale = 64 * 64;
// Codes run up to a queen promotion from h8 to h8.
constexpr std::uint32_t kCodeLimit = 5 * kPromotionScale;

// 0 none, 1 knight, 2 bishop, 3 rook, 4 queen (PieceType kKnight = 1 .. kQueen = 4).
std::uint32_t promotion_code(chess::Move move) {
  return move.kind() == chess::MoveKind::kPromotion ? static_cast<std::uint32_t>(move.promotion())
                                                    : 0;
}

}  // namespace

// chess::Move already stores castling as the king's two-square move, so the
// from and to squares are the wire's.
std::uint32_t encode_move(chess::Move move) {
  return static_cast<std::uint32_t>(move.from()) +
         kToScale * static_cast<std::uint32_t>(move.to()) + kPromotionScale * promotion_code(move);
}

std::optional<chess::Move> decode_move(const chess::Position& pos, std::uint32_t code) {
  if (code >= kCodeLimit) return std::nullopt;
  const auto from = static_cast<chess::Square>(code % kSquares);
  const auto to = static_cast<chess::Square>((code / kToScale) % kSquares);
  const std::uint32_t promotion = code / kPromotionScale;
  if (from == to) return std::nullopt;
  // Only moves of the side to move from `from` can match; skip the generator
  // for empty or enemy squares.
  const chess::Piece piece = pos.piece_on(from);
  if (piece == chess::kNoPiece || chess::color_of(piece) != pos.side_to_move()) return std::nullopt;
  for (chess::Move m : chess::legal_moves(pos))
    if (m.from() == from && m.to() == to && promotion_code(m) == promotion) return m;
  return std::nullopt;
}

}  // namespace chessrl::replay

#include "chessrl/record/move_codec.h"

#include <utility>

#include "chessrl/chess/movegen.h"

namespace chessrl::record {

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
  if (from == to) return std::nullopt;
  // Only moves of the side to move from `from` can match; skip the generator
  // for empty or enemy squares.
  const chess::Piece piece = pos.piece_on(from);
  if (piece == chess::kNoPiece || chess::color_of(piece) != pos.side_to_move()) return std::nullopt;
  return decode_move(chess::legal_moves(pos), code);
}

std::optional<chess::Move> decode_move(const chess::MoveList& legal, std::uint32_t code) {
  if (code >= kCodeLimit) return std::nullopt;
  const auto from = static_cast<chess::Square>(code % kSquares);
  const auto to = static_cast<chess::Square>((code / kToScale) % kSquares);
  const std::uint32_t promotion = code / kPromotionScale;
  for (chess::Move m : legal)
    if (m.from() == from && m.to() == to && promotion_code(m) == promotion) return m;
  return std::nullopt;
}

v1::Outcome to_wire(chess::Outcome outcome) {
  switch (outcome) {
    case chess::Outcome::kWhiteWins:
      return v1::WHITE_WINS;
    case chess::Outcome::kBlackWins:
      return v1::BLACK_WINS;
    case chess::Outcome::kDraw:
      return v1::DRAW;
    case chess::Outcome::kOngoing:
      break;
  }
  return v1::OUTCOME_UNSPECIFIED;
}

namespace {
using chess::Termination;
// The two enums side by side; index = position in the table.
constexpr std::pair<Termination, v1::Termination> kTerminations[] = {
    {Termination::kCheckmate, v1::CHECKMATE},
    {Termination::kStalemate, v1::STALEMATE},
    {Termination::kFiftyMoveRule, v1::FIFTY_MOVE_RULE},
    {Termination::kThreefoldRepetition, v1::THREEFOLD_REPETITION},
    {Termination::kInsufficientMaterial, v1::INSUFFICIENT_MATERIAL},
    {Termination::kResignation, v1::RESIGNATION},
    {Termination::kAdjudication, v1::ADJUDICATION},
    {Termination::kMoveLimit, v1::MOVE_LIMIT},
};
}  // namespace

v1::Termination to_wire(chess::Termination termination) {
  for (const auto& [ours, wire] : kTerminations) {
    if (ours == termination) return wire;
  }
  return v1::TERMINATION_UNSPECIFIED;
}

std::optional<chess::Termination> from_wire(v1::Termination termination) {
  for (const auto& [ours, wire] : kTerminations) {
    if (wire == termination) return ours;
  }
  return std::nullopt;
}

}  // namespace chessrl::record

// Moves on the wire (proto/chessrl/v1/game.proto): from + 64 * to + 4096 *
// promotion, with promotion 0 none, 1 knight, 2 bishop, 3 rook, 4 queen, and
// castling as the king's two-square move. Free functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>

#include "chessrl/chess/position.h"
#include "chessrl/chess/types.h"

namespace chessrl::replay {

std::uint32_t encode_move(chess::Move move);

// The legal move of `pos` that `code` names, or nullopt when `code` is out of
// range or names no legal move there.
std::optional<chess::Move> decode_move(const chess::Position& pos, std::uint32_t code);

}  // namespace chessrl::replay

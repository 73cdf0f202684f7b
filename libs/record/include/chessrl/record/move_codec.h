// The wire encodings of proto/chessrl/v1/game.proto. Moves: from + 64 * to +
// 4096 * promotion, with promotion 0 none, 1 knight, 2 bishop, 3 rook, 4
// queen, and castling as the king's two-square move. Outcomes and
// terminations: the chess library's enums. Free functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>

#include "chessrl/chess/movegen.h"
#include "chessrl/chess/position.h"
#include "chessrl/chess/rules.h"
#include "chessrl/chess/types.h"
#include "chessrl/v1/game.pb.h"

namespace chessrl::record {

std::uint32_t encode_move(chess::Move move);

// The legal move of `pos` that `code` names, or nullopt when `code` is out of
// range or names no legal move there.
std::optional<chess::Move> decode_move(const chess::Position& pos, std::uint32_t code);
// The same among `legal`, every legal move of one position (chess::legal_moves):
// many codes of one position cost one move generation.
std::optional<chess::Move> decode_move(const chess::MoveList& legal, std::uint32_t code);

// kOngoing -> OUTCOME_UNSPECIFIED.
v1::Outcome to_wire(chess::Outcome outcome);
// kNone -> TERMINATION_UNSPECIFIED.
v1::Termination to_wire(chess::Termination termination);
// nullopt for TERMINATION_UNSPECIFIED and values outside the enum.
std::optional<chess::Termination> from_wire(v1::Termination termination);

}  // namespace chessrl::record

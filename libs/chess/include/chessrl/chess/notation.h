// Move and square notation: UCI long algebraic (e2e4, e7e8q, e1g1 for castling)
// and SAN (Nf3, exd5, O-O, e8=Q+). Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "chessrl/chess/position.h"
#include "chessrl/core/result.h"

namespace chessrl::chess {

std::string square_name(Square s);
Result<Square> parse_square(std::string_view text);

// UCI long algebraic. Move::none() prints as "0000".
std::string to_uci(Move m);
// Parses a UCI move and checks it is legal in `pos`. Errors name the problem:
// malformed text, no piece of the side to move on the from-square, or a move
// the rules do not allow.
Result<Move> parse_uci(const Position& pos, std::string_view text);

// SAN of a legal move in `pos` (before it is made), with '+' or '#'.
// Precondition: m is legal in pos.
std::string to_san(const Position& pos, Move m);
// Parses SAN (accepts an optional check/mate suffix and annotation like "!?",
// "0-0" for castling) and checks it names exactly one legal move.
Result<Move> parse_san(const Position& pos, std::string_view text);

}  // namespace chessrl::chess

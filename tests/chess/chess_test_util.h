// Helpers shared by the chess tests: positions from FEN and moves from UCI text.
#pragma once

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "chessrl/chess/notation.h"
#include "chessrl/chess/position.h"

namespace chessrl::chess::testing {

// The position of a FEN the test knows is valid (throws chessrl::Error otherwise).
inline Position from_fen(std::string_view fen) { return Position::from_fen(fen).value_or_throw(); }

// Plays space-separated UCI moves. Returns false, and records a test failure
// naming the move and position, at the first one that is not legal.
inline bool play(Position& pos, std::string_view moves) {
  std::istringstream in{std::string(moves)};
  for (std::string uci; in >> uci;) {
    auto m = parse_uci(pos, uci);
    if (!m) {
      ADD_FAILURE() << m.error();
      return false;
    }
    pos.make_move(*m);
  }
  return true;
}

// The moves of a UCI line from a start position (empty: the standard one).
inline std::vector<Move> uci_moves(std::string_view start_fen, std::string_view line) {
  Position pos = start_fen.empty() ? Position() : from_fen(start_fen);
  std::vector<Move> moves;
  std::istringstream in{std::string(line)};
  for (std::string uci; in >> uci;) {
    moves.push_back(parse_uci(pos, uci).value_or_throw());
    pos.make_move(moves.back());
  }
  return moves;
}

}  // namespace chessrl::chess::testing

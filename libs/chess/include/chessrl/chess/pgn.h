// PGN export of one game: the Seven Tag Roster, SetUp/FEN for games that do
// not start from the standard position, SAN movetext wrapped at 80 columns,
// and the result. Pure function; thread-safe.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "chessrl/chess/types.h"
#include "chessrl/core/result.h"

namespace chessrl::chess {

struct PgnGame {
  // Further tags, written in this order after the roster (and SetUp/FEN).
  std::vector<std::pair<std::string, std::string>> tags;
  std::string event = "?";
  std::string site = "?";
  std::string date = "????.??.??";
  std::string round = "?";
  std::string white = "?";
  std::string black = "?";
  std::string start_fen;     // empty: the standard start position
  std::vector<Move> moves;   // played in order from the start position
  std::string result = "*";  // "1-0", "0-1", "1/2-1/2" or "*"
};

// The game as PGN text ending in a newline. Fails, naming the problem, when
// start_fen does not parse, a move is not legal where it is played (the error
// gives its ply, counted from 1, and UCI text), a tag name is not a PGN symbol
// or repeats a roster, SetUp or FEN tag, or the result is not one of the four
// PGN tokens. Tag values escape '\\' and '"'; line breaks in them become spaces.
Result<std::string> write_pgn(const PgnGame& game);

}  // namespace chessrl::chess

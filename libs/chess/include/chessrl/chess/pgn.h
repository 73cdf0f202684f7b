// PGN export of one game: the Seven Tag Roster, SetUp/FEN for games that do
// not start from the standard position, SAN movetext wrapped at 80 columns,
// and the result. PGN import of one game or of a multi-game file. Pure
// functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
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

// Parses the one game `text` holds (only whitespace and comments may follow it):
// the tag section ([Name "value"], with \\ and \" escapes), then the movetext.
// Roster tags fill the named fields, FEN (with or without SetUp "1") fills
// start_fen in the form Position::fen() writes, and every other tag goes into
// `tags` in order. Moves are SAN, checked against the position as the game goes
// on; move numbers (1. 1... 12.e4), {comments}, ; comments, % escape lines,
// NAGs ($1), glyphs (!?) and nested (variations) are skipped. The termination
// marker gives the result; it may be missing only at the end of the text, and
// then the Result tag (or "*") does. Fails, naming the problem and where, on
// malformed or unterminated tags, comments and variations, an illegal or
// malformed move ("PGN move 12 (ply 23) 'Nf9': ..."), or a Result tag that
// disagrees with the termination marker. Any bytes are safe input.
Result<PgnGame> read_pgn(std::string_view text);

// Parses every game of a PGN file, in order: each game ends at its termination
// marker (the last may end at the end of the text). No games for empty text.
// An error names the game that failed, counted from 1 ("PGN game 3: ...").
Result<std::vector<PgnGame>> read_pgn_games(std::string_view text);

}  // namespace chessrl::chess

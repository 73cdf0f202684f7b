// Matches between two players: pairs of games from the built-in openings,
// each opening played once with each colour, on several threads at once.
// Games end by the rules (chessrl::chess::game_result), at a move limit (a
// draw, Termination::kMoveLimit, or with adjudicate_material a win on
// material, Termination::kAdjudication), or by forfeit when a player fails to move,
// fails new_game() or plays an illegal move (the other side wins; the result's
// reason is Termination::kAdjudication, MatchGame::forfeit and the PGN's
// Termination "forfeit" and Forfeit tags say why).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "chessrl/chess/pgn.h"
#include "chessrl/chess/rules.h"
#include "chessrl/core/result.h"
#include "chessrl/eval/elo.h"
#include "chessrl/eval/player.h"

namespace chessrl::eval {

// A small built-in opening set: FENs a few moves into common, balanced
// openings (both sides' main lines), so paired games start varied and fair.
const std::vector<std::string>& opening_fens();
// The name of opening_fens()[index] ("Ruy Lopez"), for the PGN Opening tag;
// "?" out of range.
std::string opening_name(std::size_t index);

// The evaluator's match settings (its defaults, and those of `chessrl match`'s
// network players and `chessrl curve`): MCTS at 32 visits a move and games
// drawn at 300 plies. On a 2-core CPU a version's gating and gauntlet games
// at these settings take about 5 of the 58 CPU-minutes of a 29-minute `make
// run` (docs/learning.md), leaving self-play its core.
inline constexpr int kEvalVisits = 32;
inline constexpr int kEvalMaxPlies = 300;

struct MatchOptions {
  int pairs = 8;           // games = 2 * pairs; pair i uses opening (seed + i) mod the set
  int threads = 2;         // games played at once (each thread makes its own players)
  int max_plies = kEvalMaxPlies;  // a game still going after this many plies is a draw
  // ... unless a side is at least this many pawns ahead in material: it wins
  // by adjudication (chess::move_limit_result); 0: always a draw.
  int adjudicate_material = 0;
  std::uint64_t seed = 1;  // rotates which opening the first pair gets
  std::string event = "chessrl match";
  Result<void> validate() const;
};

struct MatchGame {
  int pair = 0;
  bool first_is_white = true;
  chess::GameResult result;
  double first_score = 0.5;  // 1, 0.5 or 0 for the first player
  std::string forfeit;       // why a player forfeited; empty otherwise
  // Event, Date, Round "pair.game" (from 1), White/Black names, the opening's
  // FEN (start_fen) and moves, and tags Opening, Termination, Forfeit (only
  // for a forfeit) and PlyCount.
  chess::PgnGame pgn;
};

struct MatchResult {
  MatchScore score;              // the first player's, with pair counts
  std::vector<MatchGame> games;  // by pair, then the first player as White first
  int forfeits = 0;              // games that ended by a forfeit (either side's)
  EloEstimate elo() const { return estimate_elo(score); }
};

// Plays the match. `on_game` is called (one call at a time, from match
// threads) as each game ends, e.g. to append its PGN. Stops early, returning
// the games finished, when *stop becomes true. Fails when a factory fails.
Result<MatchResult> play_match(const PlayerFactory& first, const PlayerFactory& second,
                               const MatchOptions& options,
                               const std::function<void(const MatchGame&)>& on_game = {},
                               const std::atomic<bool>* stop = nullptr);

// Appends games to a PGN file (created if absent). Errors name the path.
Result<void> append_pgn(const std::string& path, const std::vector<chess::PgnGame>& games);

}  // namespace chessrl::eval

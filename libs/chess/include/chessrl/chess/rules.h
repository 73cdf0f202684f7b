// Game-end rules: checkmate, stalemate and the automatic draws that self-play
// applies without claims. Pure functions of a Position; thread-safe for
// distinct positions.
#pragma once

#include <cstdint>
#include <string>

#include "chessrl/chess/position.h"

namespace chessrl::chess {

enum class Outcome : std::uint8_t { kOngoing, kWhiteWins, kBlackWins, kDraw };

enum class Termination : std::uint8_t {
  kNone,
  kCheckmate,
  kStalemate,
  kFiftyMoveRule,
  kThreefoldRepetition,
  kInsufficientMaterial,
  kResignation,
  kAdjudication,
  kMoveLimit
};

// How a game ended (or that it has not): the outcome and the rule that decided it.
struct GameResult {
  Outcome outcome = Outcome::kOngoing;
  Termination reason = Termination::kNone;

  bool is_over() const { return outcome != Outcome::kOngoing; }
  // "1-0", "0-1", "1/2-1/2", or "*" while ongoing.
  std::string pgn_result() const;
  // The PGN result with the reason, e.g. "1-0 (checkmate)"; "*" while ongoing.
  std::string to_string() const;

  bool operator==(const GameResult&) const = default;
};

// The result by the rules alone, checked in this order: checkmate, stalemate,
// insufficient material, fifty-move rule (halfmove clock >= 100, so a mate on
// that move still wins), threefold repetition (repetition_count() >= 3). Draws
// apply automatically. Cheap: one legal-move count, no move list.
GameResult game_result(const Position& pos);

// Whether neither side can ever checkmate, by any sequence of legal moves: no
// pawns, rooks or queens, and either at most one minor piece in all, or only
// bishops, all on squares of one colour. (K+N+N v K is not dead: mate is possible.)
bool insufficient_material(const Position& pos);

// White's material minus Black's in pawns (P 1, N 3, B 3, R 5, Q 9).
int material_balance(const Position& pos);
// The network's auxiliary material target is the side to move's
// material_balance this many plies later (or at the game's end if sooner);
// the replay service and the trainer's record loader compute it alike.
inline constexpr int kMaterialHorizonPlies = 12;

// How a game still going at a move limit ends: won by adjudication
// (Termination::kAdjudication) by the side at least `threshold` pawns ahead in
// material_balance when threshold > 0, else a draw (Termination::kMoveLimit).
GameResult move_limit_result(const Position& pos, int threshold);

// Lower-case English name: "checkmate", "fifty-move rule", ...; "none" for kNone.
const char* termination_name(Termination t);

}  // namespace chessrl::chess

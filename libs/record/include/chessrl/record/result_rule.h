// The rule a game's result obeys, written once for every shape a game takes
// (self-play's GameRecord read back from JSON Lines for `chessrl-trainer
// --data`, the wire Game the replay service validates): a game ends at the
// first position the rules end, with that result; a game the rules have not
// ended ends as self-play ends one (game_runner.cpp's finish_move). Free
// functions; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "chessrl/chess/position.h"
#include "chessrl/chess/rules.h"

namespace chessrl::record {

// The least material lead (pawns, chess::material_balance) for which
// self-play can adjudicate a win at its move limit: its thresholds
// (--adjudicate-material, --short-adjudicate-material) are at least 1 when on.
inline constexpr int kMinAdjudicationLead = 1;

// Nothing while the rules have not ended `pos`; otherwise "moves continue
// after <termination>": a move played there is a move after the game's end.
std::optional<std::string> move_after_end_problem(const chess::Position& pos);

// Nothing when `declared` is a result self-play can give a game whose final
// position is `final_position`; otherwise why not. `declared_name` is how the
// caller names the declared result in the message ("WHITE_WINS by
// CHECKMATE", "1-0 (checkmate)"). The rule:
//   - a final position the rules end (chess::game_result) has that result,
//     outcome and termination both;
//   - otherwise the game was ended by one of
//     RESIGNATION   the side to move resigned: the other side wins;
//     ADJUDICATION  a win for the side at least kMinAdjudicationLead pawns
//                   ahead at the final position (chess::move_limit_result;
//                   the threshold self-play used is not in the game);
//     MOVE_LIMIT    a draw, at any material (adjudication may be off);
//     and never by a rule-decided termination (checkmate, stalemate, the
//     fifty-move rule, threefold repetition, insufficient material) or
//     without one: an unfinished game has no result to train on.
std::optional<std::string> result_problem(const chess::Position& final_position,
                                          const chess::GameResult& declared,
                                          std::string_view declared_name);

}  // namespace chessrl::record

#include "chessrl/record/result_rule.h"

namespace chessrl::record {

using chess::Outcome;
using chess::Termination;

std::optional<std::string> move_after_end_problem(const chess::Position& pos) {
  const chess::GameResult by_rules = chess::game_result(pos);
  if (!by_rules.is_over()) return std::nullopt;
  return std::string("moves continue after ") + chess::termination_name(by_rules.reason);
}

namespace {

std::optional<std::string> adjudication_problem(const chess::Position& pos,
                                                const chess::GameResult& declared,
                                                std::string_view name) {
  if (declared.outcome == Outcome::kDraw)
    return "adjudication decides a game on material, so it needs a winner; the game says " +
           std::string(name) + " (a draw at the move limit is MOVE_LIMIT)";
  const int white_lead = chess::material_balance(pos);
  const int winner_lead = declared.outcome == Outcome::kWhiteWins ? white_lead : -white_lead;
  if (winner_lead < kMinAdjudicationLead)
    return "the game says " + std::string(name) + ", but the winner's material lead at the " +
           "final position is " + std::to_string(winner_lead) + " (adjudication needs at least " +
           std::to_string(kMinAdjudicationLead) + "): " + pos.fen();
  return std::nullopt;
}

}  // namespace

std::optional<std::string> result_problem(const chess::Position& final_position,
                                          const chess::GameResult& declared,
                                          std::string_view declared_name) {
  const std::string name(declared_name);
  const chess::GameResult by_rules = chess::game_result(final_position);
  if (by_rules.is_over()) {
    if (declared == by_rules) return std::nullopt;
    return "the final position is " + by_rules.to_string() + ", the game says " + name;
  }
  if (!declared.is_over())
    return "the game says " + name + ": it is not over, so it has no result to train on";
  switch (declared.reason) {
    case Termination::kResignation: {
      // Self-play resigns for the side to move, before it plays.
      const bool white_resigned = final_position.side_to_move() == chess::kWhite;
      const Outcome winner = white_resigned ? Outcome::kBlackWins : Outcome::kWhiteWins;
      if (declared.outcome == winner) return std::nullopt;
      return std::string("the side to move (") + (white_resigned ? "white" : "black") +
             ") resigned, so the result is " + (white_resigned ? "0-1" : "1-0") +
             "; the game says " + name;
    }
    case Termination::kAdjudication:
      return adjudication_problem(final_position, declared, name);
    case Termination::kMoveLimit:
      // chess::move_limit_result ends a game at the limit as a draw whenever
      // it does not adjudicate it, and never otherwise.
      if (declared.outcome == Outcome::kDraw) return std::nullopt;
      return "a game stopped by the move limit is a draw, the game says " + name +
             " (a win at the limit is an adjudication)";
    default:
      return "the game says " + name + " but the rules do not end the final position " +
             final_position.fen();
  }
}

}  // namespace chessrl::record

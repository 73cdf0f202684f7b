// How a match's games ended, from the first player's side: wins, draws and
// losses by termination (mate, repetition, move limit, ...), and for the lost
// games how the material went: the ply from which the first player stood 3
// pawns or more behind for the rest of the game, the balance at the end, and how that material was
// lost: to a capture of a piece it left undefended (hung) or in an exchange
// it came out of behind. Answers "does the net lose on material, and how". Not
// thread-safe: add() one game at a time (as play_match's on_game is called).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "chessrl/chess/rules.h"
#include "chessrl/eval/match.h"

namespace chessrl::eval {

struct LostGameMaterial {
  int plies = 0;
  // The ply from which the loser stayed >= 3 pawns behind to the end (a
  // piece down in the middle of an exchange does not count); -1: never.
  int behind_ply = -1;
  int final_balance = 0;   // the loser's material minus the winner's at the end
  int hung_pawns = 0;      // material lost to captures of undefended pieces
  int exchange_pawns = 0;  // material lost in exchanges (the capturer was recaptured less)
};

// The material story of a game the side `loser` lost, from its PGN's moves.
LostGameMaterial lost_game_material(const chess::PgnGame& game, chess::Color loser);

class MatchEndings {
 public:
  void add(const MatchGame& game);
  // Counts for the first player's result (0 win, 1 draw, 2 loss) by termination.
  int count(int first_result, chess::Termination reason) const;
  const std::vector<LostGameMaterial>& lost() const { return lost_; }
  // A few lines for a report: the endings table, then the lost games' material.
  std::string format(const std::string& first_name) const;

 private:
  static constexpr int kTerminations = int(chess::Termination::kMoveLimit) + 1;
  std::array<std::array<int, kTerminations>, 3> counts_{};
  std::vector<LostGameMaterial> lost_;
};

}  // namespace chessrl::eval

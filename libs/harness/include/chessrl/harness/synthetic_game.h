// Synthetic but valid games for tests and `chessrl bench replay`: random legal
// moves, every ply a training target with a random policy over some legal
// moves, and a result the validator accepts. Deterministic for a seed.
#pragma once

#include <cstdint>
#include <string>

#include "chessrl/v1/game.pb.h"

namespace chessrl::harness {

struct SyntheticGameOptions {
  int max_plies = 160;      // a game not over by then ends at the MOVE_LIMIT, a draw
  int policy_moves = 16;    // at most this many legal moves in each policy
  double target_fraction = 1.0;  // share of plies that are training targets
  std::uint64_t model_version = 0;
  std::string producer = "synthetic";
};

// A game with id "<prefix><seed>", played with moves drawn by `seed`.
v1::Game make_synthetic_game(std::uint64_t seed, const SyntheticGameOptions& options = {},
                             const std::string& id_prefix = "synthetic-");

}  // namespace chessrl::harness

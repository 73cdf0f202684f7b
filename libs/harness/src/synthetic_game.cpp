#include "chessrl/harness/synthetic_game.h"

#include <algorithm>
#include <array>
#include <vector>

#include "chessrl/chess/movegen.h"
#include "chessrl/chess/position.h"
#include "chessrl/chess/rules.h"
#include "chessrl/record/move_codec.h"
#include "chessrl/core/splitmix64.h"

namespace chessrl::harness {

namespace {

// A target at the current position: a random policy over up to `policy_moves`
// legal moves that includes the one played (index `played` in `legal`).
void add_target(v1::Game& game, int ply, const chess::MoveList& legal, int played, int policy_moves,
                SplitMix64& rng) {
  v1::MoveTarget* target = game.add_targets();
  target->set_ply(static_cast<std::uint32_t>(ply));
  target->set_root_value(static_cast<float>(2.0 * rng.uniform() - 1.0));
  target->set_root_draw(static_cast<float>(rng.uniform()));
  target->set_visits(100);

  // A partial Fisher-Yates shuffle with the played move fixed in front.
  std::array<int, chess::MoveList::kCapacity> order{};
  for (int i = 0; i < legal.size(); ++i) order[static_cast<std::size_t>(i)] = i;
  std::swap(order[0], order[static_cast<std::size_t>(played)]);
  const int n = std::clamp(policy_moves, 1, legal.size());
  for (int i = 1; i < n; ++i)
    std::swap(order[static_cast<std::size_t>(i)],
              order[static_cast<std::size_t>(i) + rng.below(static_cast<std::uint64_t>(legal.size() - i))]);

  std::vector<double> weights(static_cast<std::size_t>(n));
  double total = 0;
  for (double& w : weights) total += (w = 0.05 + rng.uniform());
  for (int i = 0; i < n; ++i) {
    target->add_policy_moves(record::encode_move(legal[order[static_cast<std::size_t>(i)]]));
    target->add_policy_probs(static_cast<float>(weights[static_cast<std::size_t>(i)] / total));
  }
}

}  // namespace

v1::Game make_synthetic_game(std::uint64_t seed, const SyntheticGameOptions& options,
                             const std::string& id_prefix) {
  v1::Game game;
  game.set_id(id_prefix + std::to_string(seed));
  game.set_model_version(options.model_version);
  game.set_producer(options.producer);
  // Moves and targets draw from separate streams, so the moves played do not
  // depend on the target options.
  SplitMix64 move_rng(seed);
  SplitMix64 target_rng(seed ^ 0x5DEECE66DULL);
  chess::Position pos;
  chess::MoveList legal;
  for (int ply = 0; ply < options.max_plies; ++ply) {
    if (chess::game_result(pos).is_over()) break;
    legal.clear();
    chess::generate_legal(pos, legal);
    const int played = static_cast<int>(move_rng.below(static_cast<std::uint64_t>(legal.size())));
    if (target_rng.uniform() < options.target_fraction)
      add_target(game, ply, legal, played, options.policy_moves, target_rng);
    game.add_moves(record::encode_move(legal[played]));
    pos.make_move(legal[played]);
  }
  const chess::GameResult result = chess::game_result(pos);
  if (result.is_over()) {
    game.set_outcome(record::to_wire(result.outcome));
    game.set_termination(record::to_wire(result.reason));
  } else {
    game.set_outcome(v1::DRAW);
    game.set_termination(v1::MOVE_LIMIT);
  }
  return game;
}

}  // namespace chessrl::harness

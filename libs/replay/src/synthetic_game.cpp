#include "chessrl/replay/synthetic_game.h"

#include <algorithm>
#include <array>
#include <vector>

#include "chessrl/chess/movegen.h"
#include "chessrl/chess/position.h"
#include "chessrl/chess/rules.h"
#include "chessrl/replay/move_codec.h"

namespace chessrl::replay {

namespace {

// SplitMix64: fixed output for a seed on every platform, so games are reproducible.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform in [0, bound); the modulo bias is negligible for bounds this small.
  int below(int bound) { return static_cast<int>(next() % static_cast<std::uint64_t>(bound)); }

 private:
  std::uint64_t state_;
};

v1::Outcome wire_outcome(chess::Outcome o) {
  switch (o) {
    case chess::Outcome::kWhiteWins:
      return v1::WHITE_WINS;
    case chess::Outcome::kBlackWins:
      return v1::BLACK_WINS;
    default:
      return v1::DRAW;
  }
}

v1::Termination wire_termination(chess::Termination t) {
  switch (t) {
    case chess::Termination::kCheckmate:
      return v1::CHECKMATE;
    case chess::Termination::kStalemate:
      return v1::STALEMATE;
    case chess::Termination::kFiftyMoveRule:
      return v1::FIFTY_MOVE_RULE;
    case chess::Termination::kThreefoldRepetition:
      return v1::THREEFOLD_REPETITION;
    case chess::Termination::kInsufficientMaterial:
      return v1::INSUFFICIENT_MATERIAL;
    default:
      return v1::ADJUDICATION;
  }
}

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
              order[static_cast<std::size_t>(i + rng.below(legal.size() - i))]);

  std::vector<double> weights(static_cast<std::size_t>(n));
  double total = 0;
  for (double& w : weights) total += (w = 0.05 + rng.uniform());
  for (int i = 0; i < n; ++i) {
    target->add_policy_moves(encode_move(legal[order[static_cast<std::size_t>(i)]]));
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
    const int played = move_rng.below(legal.size());
    if (target_rng.uniform() < options.target_fraction)
      add_target(game, ply, legal, played, options.policy_moves, target_rng);
    game.add_moves(encode_move(legal[played]));
    pos.make_move(legal[played]);
  }
  const chess::GameResult result = chess::game_result(pos);
  if (result.is_over()) {
    game.set_outcome(wire_outcome(result.outcome));
    game.set_termination(wire_termination(result.reason));
  } else {
    game.set_outcome(v1::DRAW);
    game.set_termination(v1::ADJUDICATION);
  }
  return game;
}

}  // namespace chessrl::replay

// The players of `chessrl match` and `chessrl curve`: an anchor spec (random,
// greedy, uci:...), a checkpoint searched with MCTS (model:PATH), or MCTS on
// the uniform fake network, each made into an eval::PlayerFactory. Not
// thread-safe to build; the factories it returns are.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "chessrl/eval/player.h"
#include "chessrl/nn/batch_evaluator.h"
#include "chessrl/nn/model_limits.h"

namespace chessrl::tool {

// Networks the players search with: one BatchEvaluator per model (or for the
// uniform fake network), shared by every player and thread that uses it.
class Networks {
 public:
  // `threads` match threads, each searching `leaves` leaves a round, size the
  // evaluator's batches; `device` is where model: networks run (cpu, cuda);
  // a checkpoint with more than `max_model_params` parameters is refused
  // before it is allocated (0: no ceiling).
  Networks(int threads, int leaves, std::string device,
           std::int64_t max_model_params = nn::kDefaultMaxModelParams);

  // The evaluator for "uniform" or "model:PATH", made on first use. Throws
  // chessrl::Error prefixed with `option` when the checkpoint does not load.
  nn::BatchEvaluator& get(const std::string& key, const std::string& option);

 private:
  std::shared_ptr<nn::InferenceBackend> make_backend(const std::string& key,
                                                     const std::string& option) const;
  nn::BatchEvaluatorOptions evaluator_options() const;

  int threads_, leaves_;
  std::string device_;
  std::int64_t max_model_params_;
  std::map<std::string, std::unique_ptr<nn::BatchEvaluator>> evaluators_;
};

// A factory for one side's spec: random, greedy, uniform, model:PATH or
// uci:PROGRAM[;KEY=VALUE]...; MCTS players search `visits` root visits a move,
// `leaves` leaves a round (the evaluator's setting unless told otherwise),
// with Gumbel at the root when `gumbel` (mcts::SearchParams::gumbel).
// `option` (--first, --second) names the side in errors (chessrl::Error).
// The factory's players are seeded from `seed` and a count of players made.
eval::PlayerFactory make_side(const std::string& spec, const std::string& option,
                              std::uint64_t seed, int visits, Networks& networks,
                              int leaves = eval::MctsPlayerOptions{}.leaves_per_round,
                              bool gumbel = false);

}  // namespace chessrl::tool

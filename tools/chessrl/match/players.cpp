// Players for `chessrl match` and `chessrl curve` (match/players.h).
#include "match/players.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <utility>

#include "chessrl/core/error.h"
#include "chessrl/eval/uci_engine.h"
#include "chessrl/mcts/random.h"
#include "chessrl/nn/torch_backend.h"
#include "chessrl/runtime/model.h"

namespace chessrl::tool {

Networks::Networks(int threads, int leaves, std::string device, std::int64_t max_model_params)
    : threads_(threads),
      leaves_(leaves),
      device_(std::move(device)),
      max_model_params_(max_model_params) {}

nn::BatchEvaluator& Networks::get(const std::string& key, const std::string& option) {
  auto& slot = evaluators_[key];
  if (!slot)
    slot = std::make_unique<nn::BatchEvaluator>(make_backend(key, option), evaluator_options());
  return *slot;
}

std::shared_ptr<nn::InferenceBackend> Networks::make_backend(const std::string& key,
                                                             const std::string& option) const {
  if (key == "uniform") return runtime::uniform_model().backend;
  const std::string path = key.substr(6);  // after "model:"
  nn::TorchBackendOptions o;
  o.device = device_;
  o.limits.max_parameters = max_model_params_;
  auto model = runtime::model_from_file(path, o);
  if (!model) throw Error(option + " " + key + ": " + model.error());
  return model->backend;
}

nn::BatchEvaluatorOptions Networks::evaluator_options() const {
  nn::BatchEvaluatorOptions o;
  // Each match thread searches one move at a time: its leaves are a round.
  o.max_batch = std::max(1, threads_ * leaves_);
  o.batch_timeout = std::chrono::microseconds(1000);
  return o;
}

eval::PlayerFactory make_side(const std::string& spec, const std::string& option,
                              std::uint64_t seed, int visits, Networks& networks, int leaves,
                              bool gumbel) {
  if (spec == "uniform" || spec.rfind("model:", 0) == 0) {
    if (spec == "model:") throw Error(option + " model:: no checkpoint path after 'model:'");
    nn::BatchEvaluator& evaluator = networks.get(spec, option);
    const std::string name =
        spec == "uniform" ? "uniform" : std::filesystem::path(spec.substr(6)).stem().string();
    auto made = std::make_shared<std::atomic<std::uint64_t>>(0);
    eval::MctsPlayerOptions mo;
    mo.visits = visits;
    mo.leaves_per_round = leaves;
    mo.random_plies = 2;
    mo.search.gumbel = gumbel;
    return [&evaluator, mo, name, seed, made]() -> Result<std::unique_ptr<eval::Player>> {
      eval::MctsPlayerOptions mine = mo;
      mine.seed = mcts::mix64(seed ^ mcts::mix64((*made)++));
      return eval::make_mcts_player(evaluator, mine, name);
    };
  }
  auto factory = eval::parse_anchor(spec, seed);
  if (factory) return std::move(factory).value();
  if (spec.rfind("uci:", 0) == 0) throw Error(option + ": " + factory.error());
  throw Error(option + " '" + spec +
              "': expected random, greedy, uniform, model:PATH or uci:PROGRAM[;KEY=VALUE]...");
}

}  // namespace chessrl::tool

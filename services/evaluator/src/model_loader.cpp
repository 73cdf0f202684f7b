#include "model_loader.h"

#include <algorithm>
#include <atomic>
#include <utility>

#include "chessrl/runtime/registry.h"

namespace chessrl::evaluator_service {

LoadResult load_model(rpc::ModelRegistryClient& registry, std::uint64_t version, bool best,
                      const ModelLoaderOptions& options) {
  runtime::ModelOptions model_options;
  model_options.torch = options.backend;
  model_options.save_path = options.save_path;
  runtime::ModelLoad load = runtime::fetch_model(registry, version, best, model_options);
  LoadResult out;
  out.error = load.error;
  out.message = std::move(load.message);
  if (!load.ok()) return out;
  runtime::Model& loaded = *load.model;
  nn::BatchEvaluatorOptions evaluator_options;
  evaluator_options.max_batch = std::max(1, options.max_batch);
  evaluator_options.batch_timeout = std::chrono::microseconds(500);
  auto model = std::make_unique<LoadedModel>();
  model->version = loaded.version;
  model->description = loaded.network + ", step " + std::to_string(loaded.step);
  model->evaluator = std::make_unique<nn::BatchEvaluator>(loaded.backend, evaluator_options);
  out.model = std::move(model);
  return out;
}

eval::PlayerFactory player_factory(LoadedModel& model, const eval::MctsPlayerOptions& options,
                                   std::string name) {
  auto made = std::make_shared<std::atomic<std::uint64_t>>(0);
  return
      [&model, options, name = std::move(name), made]() -> Result<std::unique_ptr<eval::Player>> {
        eval::MctsPlayerOptions o = options;
        o.seed = options.seed * 0x9E3779B97F4A7C15ull + made->fetch_add(1) + 1;
        return eval::make_mcts_player(*model.evaluator, o, name);
      };
}

}  // namespace chessrl::evaluator_service

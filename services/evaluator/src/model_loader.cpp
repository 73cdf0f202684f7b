#include "model_loader.h"

#include <atomic>
#include <utility>

#include "chessrl/nn/checkpoint.h"
#include "chessrl/nn/model_limits.h"
#include "evaluator_state.h"

namespace chessrl::evaluator {

LoadResult load_model(rpc::ModelRegistryClient& registry, std::uint64_t version, bool best,
                      const ModelLoaderOptions& options) {
  LoadResult out;
  const std::string what = best ? std::string("the best model") : "v" + std::to_string(version);
  auto fetched = registry.get(best ? 0 : version, best);
  if (!fetched.ok()) {
    const std::string& error = fetched.error();
    // A version that is not there will not appear by asking again.
    const bool missing = error.find("NOT_FOUND") != std::string::npos ||
                         error.find("INVALID_ARGUMENT") != std::string::npos;
    out.error = missing ? LoadError::kModel : LoadError::kRegistry;
    out.message = what + ": " + error;
    return out;
  }
  const std::uint64_t got = fetched->first.version();
  const std::string name = "v" + std::to_string(got);
  auto checkpoint = nn::parse_checkpoint(fetched->second);
  if (!checkpoint.ok()) {
    out.error = LoadError::kModel;
    out.message = name + ": not a usable checkpoint: " + checkpoint.error();
    return out;
  }
  // Before anything is allocated for the network (and before it is saved).
  if (auto checked = nn::check_model(*checkpoint, options.backend.limits); !checked.ok()) {
    out.error = LoadError::kRefused;
    out.message = name + ": " + checked.error();
    return out;
  }
  if (!options.save_path.empty()) {
    if (auto saved = write_file_atomically(options.save_path, fetched->second); !saved.ok()) {
      out.error = LoadError::kBackend;  // a full or read-only disk will not heal by itself
      out.message = name + ": " + saved.error();
      return out;
    }
  }
  auto backend = nn::make_torch_backend(*checkpoint, options.backend);
  if (!backend.ok()) {
    out.error = LoadError::kBackend;
    out.message = name + ": " + backend.error();
    return out;
  }
  nn::BatchEvaluatorOptions evaluator_options;
  evaluator_options.max_batch = std::max(1, options.max_batch);
  evaluator_options.batch_timeout = std::chrono::microseconds(500);
  auto model = std::make_unique<LoadedModel>();
  model->version = got;
  model->description =
      checkpoint->info.config.name() + ", step " + std::to_string(checkpoint->info.step);
  model->evaluator = std::make_unique<nn::BatchEvaluator>(
      std::shared_ptr<nn::InferenceBackend>(std::move(backend).value()), evaluator_options);
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

}  // namespace chessrl::evaluator

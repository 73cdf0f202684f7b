// Models from the registry made ready to play: the checkpoint fetched and
// parsed, a LibTorch backend built on the chosen device, and one
// BatchEvaluator over it that every game thread's MCTS player shares.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "chessrl/eval/player.h"
#include "chessrl/nn/batch_evaluator.h"
#include "chessrl/nn/torch_backend.h"
#include "chessrl/rpc/clients.h"

namespace chessrl::evaluator {

// A model with its evaluator. Not copyable; players made by player_factory()
// refer to it, so it must outlive their matches.
struct LoadedModel {
  std::uint64_t version = 0;
  std::string description;  // e.g. "1x8, step 200"
  std::unique_ptr<nn::BatchEvaluator> evaluator;
};

enum class LoadError {
  kNone,
  kRegistry,  // the registry failed to answer (try again later)
  kModel,     // the version is missing or not a usable checkpoint (skip it)
  kRefused,   // nn::check_model refused it before anything was allocated: over
              // --max-model-params, or weights that do not match its header (skip it)
  kBackend,   // the backend cannot be built (a configuration error: stop)
};

struct LoadResult {
  std::unique_ptr<LoadedModel> model;  // set when error is kNone
  LoadError error = LoadError::kNone;
  std::string message;
};

struct ModelLoaderOptions {
  nn::TorchBackendOptions backend;  // its limits: the parameter ceiling
  int max_batch = 16;               // match threads x leaves per round is enough
  // When not empty, the fetched bytes are also written here (atomically),
  // once the checkpoint has passed nn::check_model.
  std::string save_path;
};

// Fetches `version` (0 and best: the registry's best) and builds its evaluator.
LoadResult load_model(rpc::ModelRegistryClient& registry, std::uint64_t version, bool best,
                      const ModelLoaderOptions& options);

// Makes MCTS players over `model` named `name`, each with its own seed drawn
// from `seed`. `model` must outlive every player made.
eval::PlayerFactory player_factory(LoadedModel& model, const eval::MctsPlayerOptions& options,
                                   std::string name);

}  // namespace chessrl::evaluator

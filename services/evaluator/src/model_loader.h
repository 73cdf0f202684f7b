// Models from the registry made ready to play: fetched, checked and built by
// libs/runtime (the model path self-play and the CLI share), and one
// BatchEvaluator over it that every game thread's MCTS player shares.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "chessrl/eval/player.h"
#include "chessrl/nn/batch_evaluator.h"
#include "chessrl/nn/torch_backend.h"
#include "chessrl/rpc/clients.h"
#include "chessrl/runtime/model.h"

namespace chessrl::evaluator_service {

// A model with its evaluator. Not copyable; players made by player_factory()
// refer to it, so it must outlive their matches.
struct LoadedModel {
  std::uint64_t version = 0;
  std::string description;  // e.g. "1x8, step 200"
  std::unique_ptr<nn::BatchEvaluator> evaluator;
};

// What went wrong, classified once for every program (libs/runtime): the
// evaluator retries kUnavailable later, skips a version that is kMissing,
// kUnusable or kRefused (never fetched again), and stops on kBackend.
using LoadError = runtime::ModelError;

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

}  // namespace chessrl::evaluator_service

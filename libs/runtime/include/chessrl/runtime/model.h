// The model path every program shares: a checkpoint (bytes from the registry,
// a file, or a fresh network) checked and built into an inference backend.
// Each failure is classified here, once, so self-play, the evaluator and the
// CLI decide the same way what it means (retry later, skip the version, or
// stop); what each then does is its own policy (docs/architecture.md, "Who
// retries what"). No LibTorch and no gRPC in this header (registry.h has the
// registry side). Free functions; thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "chessrl/core/result.h"
#include "chessrl/nn/backend.h"
#include "chessrl/nn/network_config.h"
#include "chessrl/nn/torch_backend.h"

namespace chessrl::runtime {

// A network ready to evaluate positions.
struct Model {
  std::shared_ptr<nn::InferenceBackend> backend;
  std::uint64_t version = 0;  // the registry's version; 0: a bootstrap, or a file without one
  std::string network;        // "6x64"; empty without a network (uniform, random)
  std::int64_t step = 0;      // the training step it was saved at
  std::string description;    // for logs: "version 3 (libtorch cpu fp32 6x64 nhwc)"
};

// Why a model could not be made ready.
enum class ModelError {
  kNone,
  kUnavailable,  // the registry did not answer now (UNAVAILABLE, a deadline, a
                 // token refused, INTERNAL): asking again later may pass
  kMissing,      // the registry answered that this version cannot be had
                 // (NOT_FOUND, DATA_LOSS, too large, invalid): it never will
  kUnusable,     // the bytes are not a checkpoint (truncated, corrupt, unknown format)
  kRefused,      // nn::check_model refused it before anything was allocated
                 // (over the parameter ceiling, weights that do not match its header)
  kBackend,      // it cannot be built or kept here: the device, an architecture
                 // the code does not build, a copy that cannot be saved
};
// "none", "unavailable", "missing", "unusable", "refused", "backend".
std::string_view error_label(ModelError error);

struct ModelOptions {
  nn::TorchBackendOptions torch;  // its limits: the parameter ceiling
  // When not empty, the fetched bytes are also written here (atomically) once
  // nn::check_model has passed them, before the backend is built.
  std::string save_path;
};

// A model, or why not. `reason` is the label a skip is counted under
// ("not_found", "data_loss", "too_large", "invalid", "unusable", "refused",
// "backend"; "" when the model is there or asking again may pass).
struct ModelLoad {
  std::optional<Model> model;  // set when error is kNone
  ModelError error = ModelError::kNone;
  std::string reason;
  std::string message;  // names the version and the problem: "v3: <detail>"
  std::string detail;   // the problem alone, for a caller that names the version itself
  bool ok() const { return error == ModelError::kNone; }
};

// A checkpoint's bytes as registry version `version`: parsed, checked against
// options.torch.limits before anything is allocated, saved when asked, built.
ModelLoad build_model(std::string_view bytes, std::uint64_t version, const ModelOptions& options);

// A checkpoint file, with the version written in it; errors start with the path.
Result<Model> model_from_file(const std::string& path, const nn::TorchBackendOptions& options);
// A fresh network with random weights from `seed` (the operator's own --net:
// no parameter ceiling applies), version 0.
Result<Model> fresh_model(const nn::NetworkConfig& config, std::uint64_t seed,
                          const nn::TorchBackendOptions& options);
// No network: uniform priors and even values (a bootstrap), version 0.
Model uniform_model();
// No network: hashed random outputs (tests and benchmarks), version 0.
Model random_model();

}  // namespace chessrl::runtime

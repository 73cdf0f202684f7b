#include "chessrl/runtime/model.h"

#include <algorithm>
#include <utility>

#include "chessrl/core/files.h"
#include "chessrl/nn/checkpoint.h"
#include "chessrl/nn/model_limits.h"

namespace chessrl::runtime {

namespace {

Result<Model> from_checkpoint(const nn::Checkpoint& checkpoint, std::uint64_t version,
                              const nn::TorchBackendOptions& options) {
  auto backend = nn::make_torch_backend(checkpoint, options);
  if (!backend.ok()) return fail(backend.error());
  Model model;
  model.backend = std::shared_ptr<nn::InferenceBackend>(std::move(backend).value());
  model.version = version;
  model.network = checkpoint.info.config.name();
  model.step = checkpoint.info.step;
  model.description = model.backend->describe();
  return model;
}

ModelLoad failed(ModelError error, std::string reason, const std::string& name,
                 std::string detail) {
  ModelLoad out;
  out.error = error;
  out.reason = std::move(reason);
  out.message = name + ": " + detail;
  out.detail = std::move(detail);
  return out;
}

}  // namespace

std::string_view error_label(ModelError error) {
  switch (error) {
    case ModelError::kNone:
      return "none";
    case ModelError::kUnavailable:
      return "unavailable";
    case ModelError::kMissing:
      return "missing";
    case ModelError::kUnusable:
      return "unusable";
    case ModelError::kRefused:
      return "refused";
    case ModelError::kBackend:
      return "backend";
  }
  return "unknown";
}

ModelLoad build_model(std::string_view bytes, std::uint64_t version, const ModelOptions& options) {
  const std::string name = "v" + std::to_string(version);
  auto checkpoint = nn::parse_checkpoint(bytes);
  if (!checkpoint.ok()) {
    return failed(ModelError::kUnusable, "unusable", name,
                  "not a usable checkpoint: " + checkpoint.error());
  }
  // Before anything is allocated for the network (and before it is saved).
  if (auto checked = nn::check_model(*checkpoint, options.torch.limits); !checked.ok())
    return failed(ModelError::kRefused, "refused", name, checked.error());
  if (!options.save_path.empty()) {
    // A full or read-only disk does not heal by itself.
    if (auto saved = write_file_atomically(options.save_path, bytes); !saved.ok())
      return failed(ModelError::kBackend, "backend", name, saved.error());
  }
  auto model = from_checkpoint(*checkpoint, version, options.torch);
  if (!model.ok()) return failed(ModelError::kBackend, "backend", name, model.error());
  ModelLoad out;
  out.model = std::move(model).value();
  return out;
}

Result<Model> model_from_file(const std::string& path, const nn::TorchBackendOptions& options) {
  auto checkpoint = nn::load_checkpoint_file(path);
  if (!checkpoint.ok()) return fail(path + ": " + checkpoint.error());
  const auto version =
      static_cast<std::uint64_t>(std::max<std::int64_t>(0, checkpoint->info.version));
  auto model = from_checkpoint(*checkpoint, version, options);
  if (!model.ok()) return fail(path + ": " + model.error());
  model->description =
      "version " + std::to_string(version) + " (" + model->description + ", " + path + ")";
  return model;
}

Result<Model> fresh_model(const nn::NetworkConfig& config, std::uint64_t seed,
                          const nn::TorchBackendOptions& options) {
  // The operator's own --net, built already: no ceiling applies.
  nn::TorchBackendOptions unlimited = options;
  unlimited.limits.max_parameters = 0;
  auto model = from_checkpoint(nn::fresh_checkpoint(config, seed), 0, unlimited);
  if (model.ok()) model->description = "bootstrap: fresh random " + model->description;
  return model;
}

Model uniform_model() {
  Model model;
  model.backend = std::make_shared<nn::FakeBackend>(nn::FakeBackend::Mode::kUniform);
  model.description = "bootstrap: " + model.backend->describe();
  return model;
}

Model random_model() {
  Model model;
  model.backend = std::make_shared<nn::FakeBackend>(nn::FakeBackend::Mode::kRandom);
  model.description = model.backend->describe();
  return model;
}

}  // namespace chessrl::runtime

#include "backend_setup.h"

#include "chessrl/core/error.h"
#include "chessrl/nn/torch_backend.h"
#include "chessrl/runtime/model.h"

namespace chessrl::tool {

void BackendSetup::add_options(CLI::App& app, const std::string& default_backend) {
  backend = default_backend;
  app.add_option("--model", model, "Checkpoint file to play with");
  app.add_option("--backend", backend,
                 "torch (the --model, or a fresh --net with random weights), or uniform/random: "
                 "no network (uniform priors and even values; or hashed random outputs)")
      ->check(CLI::IsMember({"torch", "uniform", "random"}))
      ->capture_default_str();
  app.add_option("--net", net,
                 "A fresh network when there is no --model: BLOCKSxFILTERS, then any of -seR, "
                 "-gpN, -feat, -reply, -mlh (docs/nn.md)")
      ->capture_default_str();
  runtime::DeviceOptions::add_to(app);
}

std::shared_ptr<nn::InferenceBackend> BackendSetup::make() const {
  if (!model.empty() && backend != "torch")
    throw Error("--model needs --backend torch, not '" + backend + "'");
  if (backend == "uniform") return runtime::uniform_model().backend;
  if (backend == "random") return runtime::random_model().backend;
  const nn::TorchBackendOptions options = torch_options().value_or_throw();
  if (!model.empty()) {
    auto loaded = runtime::model_from_file(model, options);
    if (!loaded) throw Error("--model " + loaded.error());
    return loaded->backend;
  }
  auto config = nn::parse_network_name(net);
  if (!config) throw Error("--net " + net + ": " + config.error());
  auto fresh = runtime::fresh_model(*config, 1, options);
  if (!fresh) throw Error(fresh.error());
  return fresh->backend;
}

std::string BackendSetup::describe(const nn::InferenceBackend& b) const {
  std::string text = b.describe();
  if (!model.empty())
    text += " (model " + model + ")";
  else if (backend == "torch")
    text += " (fresh random weights)";
  return text;
}

}  // namespace chessrl::tool

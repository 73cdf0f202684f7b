// How the tool's commands get an inference backend: a checkpoint file, a fresh
// network of a given size (random weights, for benchmarks), or a fake backend
// (uniform/random, no network). Shared by selfplay, uci and the benchmarks.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "chessrl/nn/backend.h"
#include "chessrl/runtime/options.h"

namespace chessrl::tool {

// The device group (runtime/options.h: --device, --precision, --nn-threads,
// --max-model-params), and where the network comes from.
struct BackendSetup : runtime::DeviceOptions {
  std::string model;              // checkpoint file; empty: see `backend` and `net`
  std::string backend = "torch";  // torch, uniform or random
  std::string net = "6x64";       // a fresh network's size when there is no model

  // Registers --model, --backend, --net and the device group's flags.
  void add_options(CLI::App& app, const std::string& default_backend = "torch");
  // BatchEvaluator workers for this setup: the backend's preferred streams.
  // Throws chessrl::Error with a clear message on a bad file or option.
  std::shared_ptr<nn::InferenceBackend> make() const;
  // One line for logs: "libtorch cpu fp32 6x64 (model run/model-12.ckpt)".
  std::string describe(const nn::InferenceBackend& backend) const;
};

}  // namespace chessrl::tool

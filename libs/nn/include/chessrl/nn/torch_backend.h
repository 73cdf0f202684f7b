// The LibTorch inference backend, on the CPU or a CUDA GPU. This header does
// not include LibTorch, so anything can create a backend without compiling it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "chessrl/core/result.h"
#include "chessrl/nn/backend.h"
#include "chessrl/nn/checkpoint.h"
#include "chessrl/nn/model_limits.h"
#include "chessrl/nn/network_config.h"

namespace chessrl::nn {

enum class Precision { kFloat32, kFloat16, kBFloat16 };

struct TorchBackendOptions {
  std::string device = "cpu";  // "cpu", "cuda" or "cuda:N"
  // Weights and activations on the device. fp16/bf16 need CUDA; the CPU runs fp32.
  Precision precision = Precision::kFloat32;
  int threads = 0;            // CPU threads per forward pass (process-wide); 0: default_cpu_split()
  bool channels_last = true;  // NHWC activations (much faster with oneDNN and cuDNN)
  bool fold_batchnorm = true;  // fold batch norm into the convolutions (inference only)
  // Checked before the network is built (check_model): the parameter ceiling.
  ModelLimits limits = {};
};

// A backend running the checkpoint's network. Its preferred_streams() is 2 on
// CUDA and, on the CPU, the cores over `threads`. Fails on a bad device name, CUDA
// asked for but not present (or LibTorch built without it), fp16/bf16 on
// the CPU, or a checkpoint check_model() refuses under options.limits (checked
// before anything is allocated); the error says which.
Result<std::unique_ptr<InferenceBackend>> make_torch_backend(const Checkpoint& checkpoint,
                                                             const TorchBackendOptions& options);

// A fresh network of `config` with random weights from `seed` as a checkpoint
// (no optimizer state) with `info`'s step, version and creation time, for
// callers that need not compile LibTorch's headers (the services, the CLI, tests).
Checkpoint fresh_checkpoint(const NetworkConfig& config, std::uint64_t seed,
                            ModelInfo info = {});

// How to split a CPU between BatchEvaluator workers (concurrent forward passes)
// and LibTorch threads inside each pass. Separate single-threaded passes beat
// one pass spread over all cores, which stalls at OpenMP barriers whenever a
// core is taken by another thread (measured on 2 cores: docs/benchmarks.md).
struct CpuSplit {
  int workers;
  int threads;
};
// For `cores` cores (0: this machine's): up to 4 workers, the cores shared among them.
CpuSplit default_cpu_split(int cores = 0);

// Facts about the LibTorch this program runs with (for `chessrl doctor` and benchmarks).
struct TorchInfo {
  std::string version;      // e.g. "1.13.1"
  bool cuda_build = false;  // LibTorch compiled with CUDA
  int cuda_devices = 0;     // GPUs visible now
  int cpu_threads = 0;      // intra-op threads
};
TorchInfo torch_info();

std::string precision_name(Precision p);
Result<Precision> parse_precision(const std::string& text);  // "fp32", "fp16", "bf16"

}  // namespace chessrl::nn

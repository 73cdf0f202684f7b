// What a network of a given architecture stores, computed from its
// NetworkConfig alone, and the check every loader runs on a checkpoint before
// anything is built from it: a header that names a huge network, or weights
// that do not add up to what the header names, is refused without allocating
// the network. No LibTorch here; free functions, thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chessrl/core/result.h"
#include "chessrl/nn/checkpoint.h"
#include "chessrl/nn/network_config.h"

namespace chessrl::nn {

// The default ceiling: 100 million numbers (400 MB as float32). The largest
// network this project's docs train is 10x128 (3.5 M); a Leela-size 20x256 is
// 24.8 M, 30x384 81.7 M; the largest architecture validate() admits, 64x1024,
// is 1.2 billion.
inline constexpr std::int64_t kDefaultMaxModelParams = 100'000'000;

struct ModelLimits {
  // Most numbers (weights, biases and batch-norm statistics) a model may
  // have; 0: no ceiling.
  std::int64_t max_parameters = kDefaultMaxModelParams;
};

// One tensor a network stores: its name as to_checkpoint() writes it.
struct TensorSpec {
  std::string name;
  TensorType type = TensorType::kFloat32;
  std::vector<std::int64_t> shape;
  std::int64_t numel() const;
  std::int64_t bytes() const;  // numel * element size
};

// Every parameter and buffer of a network of `config` (torch_network.h), in
// no particular order. Precondition: config.validate() passed. A test checks
// it against the LibTorch network's own list.
std::vector<TensorSpec> network_tensors(const NetworkConfig& config);

struct ModelSize {
  std::int64_t parameters = 0;  // numbers stored, batch-norm statistics included
  std::int64_t bytes = 0;       // their bytes in a checkpoint (float32; counters int64)
};
// Precondition: config.validate() passed (then nothing overflows).
ModelSize model_size(const NetworkConfig& config);

// Runs before anything is built from `checkpoint` (network_from_checkpoint
// calls it first): refuses, naming the numbers, an architecture out of range,
// a model with more parameters than limits.max_parameters, weights that are
// fewer bytes than the architecture needs, and a tensor missing, extra, of
// another shape or type, or whose data is not its shape's size. Its cost is
// the size of the tensor table, never of the architecture named.
Result<void> check_model(const Checkpoint& checkpoint, const ModelLimits& limits);

// 1234567 -> "1,234,567" (for the messages above and the services' logs).
std::string with_thousands(std::int64_t value);

}  // namespace chessrl::nn

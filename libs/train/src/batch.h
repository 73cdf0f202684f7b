// Examples to tensors (LibTorch). Internal to libs/train.
#pragma once

#include <torch/types.h>

#include <cstddef>
#include <vector>

#include "chessrl/train/example.h"

namespace chessrl::train {

struct Batch {
  torch::Tensor input;   // [N, 112, 8, 8] float32
  torch::Tensor policy;  // [N, 4672] float32, rows sum to 1
  torch::Tensor wdl;     // [N] int64: 0 win, 1 draw, 2 loss for the side to move
  std::int64_t size() const { return input.size(0); }
  // The rows [begin, begin + count) (views, no copy).
  Batch slice(std::int64_t begin, std::int64_t count) const;
  Batch to(const torch::Device& device, bool non_blocking) const;
};

// On the CPU; pinned when `pin` (for fast copies to a GPU).
Batch make_batch(const std::vector<Example>& examples, bool pin = false);

// The two heads' losses, each a mean over the batch (float32 scalars):
// policy cross-entropy against the visit distribution, value cross-entropy
// against the game's result.
struct LossTerms {
  torch::Tensor policy;
  torch::Tensor value;
};
LossTerms compute_losses(const torch::Tensor& policy_logits, const torch::Tensor& wdl_logits,
                         const Batch& batch);

}  // namespace chessrl::train

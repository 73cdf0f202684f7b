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
  torch::Tensor wdl;     // [N, 3] float32: win, draw, loss for the side to move, rows sum to 1
  // [N, 4672] bool: the legal moves; undefined when the policy loss is over
  // every index.
  torch::Tensor legal;
  // [N] float32: the material head's target, tanh(lead / kMaterialScale), and
  // its weight (1, or 0 where the target is unknown).
  torch::Tensor material;
  torch::Tensor material_weight;
  std::int64_t size() const { return input.size(0); }
  // The rows [begin, begin + count) (views, no copy).
  Batch slice(std::int64_t begin, std::int64_t count) const;
  Batch to(const torch::Device& device, bool non_blocking) const;
};

// On the CPU; pinned when `pin` (for fast copies to a GPU). The value target
// is (1 - q_ratio) x the game's result (one-hot) + q_ratio x the search's
// win/draw/loss at the position (from root_value and root_draw).
// With `mask_illegal`, `legal` marks each example's legal moves (an example
// without a list has every index legal).
// Pawns of material lead that map to tanh(1) = 0.76 in the material target:
// a pawn 0.24, a minor piece 0.64, a rook 0.85, a queen 0.98.
inline constexpr double kMaterialScale = 4.0;

Batch make_batch(const std::vector<Example>& examples, bool pin = false, double q_ratio = 0,
                 bool mask_illegal = false);

// The two heads' losses, each a mean over the batch (float32 scalars):
// policy cross-entropy against the visit distribution (a softmax over the
// legal moves when the batch has `legal`, as the search's priors are), value
// cross-entropy against the value target.
// With `material` (the material head's output, [N]), also its mean squared
// error over the positions whose target is known (0 without).
struct LossTerms {
  torch::Tensor policy;
  torch::Tensor value;
  torch::Tensor material;
};
LossTerms compute_losses(const torch::Tensor& policy_logits, const torch::Tensor& wdl_logits,
                         const Batch& batch, const torch::Tensor& material = {});

}  // namespace chessrl::train

// Examples to tensors (LibTorch). Internal to libs/train.
#pragma once

#include <torch/types.h>

#include <cstddef>
#include <vector>

#include "chessrl/nn/torch_network.h"
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
  // [N] int64: the reply head's target, the opponent's reply as a policy
  // index (0 where unknown), and [N] float32 its weight (1, or 0: no reply).
  torch::Tensor reply;
  torch::Tensor reply_weight;
  // [N] float32: the moves-left head's target, plies left / kMovesLeftScale,
  // and its weight (1, or 0 where unknown).
  torch::Tensor moves_left;
  torch::Tensor moves_left_weight;
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
  torch::Tensor reply;       // 0 without the reply head's output
  torch::Tensor moves_left;  // 0 without the moves-left head's output
};
LossTerms compute_losses(const torch::Tensor& policy_logits, const torch::Tensor& wdl_logits,
                         const Batch& batch, const torch::Tensor& material = {});

// Huber loss's delta for the moves-left head, in its units (plies left /
// kMovesLeftScale): 0.5 = 10 plies, lc0's. Errors below it count squared,
// larger ones linearly, so a few long games do not dominate.
inline constexpr double kMovesLeftHuberDelta = 0.5;

// Every head the network output has: compute_losses above, and with
// `out.reply` the reply head's cross-entropy against the opponent's reply
// (a softmax over all 4,672 indices: the opponent's legal moves are not
// generated), with `out.moves_left` the moves-left head's Huber loss; each a
// mean over the positions whose target is known (0 when none is).
LossTerms compute_losses(const nn::NetworkOutput& out, const Batch& batch);

}  // namespace chessrl::train

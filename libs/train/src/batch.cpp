#include "batch.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

#include "chessrl/nn/policy_map.h"

namespace chessrl::train {

Batch Batch::slice(std::int64_t begin, std::int64_t count) const {
  return Batch{input.narrow(0, begin, count), policy.narrow(0, begin, count),
               wdl.narrow(0, begin, count),
               legal.defined() ? legal.narrow(0, begin, count) : torch::Tensor(),
               material.narrow(0, begin, count), material_weight.narrow(0, begin, count)};
}

Batch Batch::to(const torch::Device& device, bool non_blocking) const {
  return Batch{input.to(device, non_blocking), policy.to(device, non_blocking),
               wdl.to(device, non_blocking),
               legal.defined() ? legal.to(device, non_blocking) : torch::Tensor(),
               material.to(device, non_blocking), material_weight.to(device, non_blocking)};
}

Batch make_batch(const std::vector<Example>& examples, bool pin, double q_ratio,
                 bool mask_illegal) {
  const auto n = static_cast<std::int64_t>(examples.size());
  auto options = torch::TensorOptions().dtype(torch::kFloat32).pinned_memory(pin);
  Batch b{torch::empty({n, nn::kInputPlanes, 8, 8}, options),
          torch::zeros({n, nn::kPolicySize}, options), torch::empty({n, 3}, options),
          torch::Tensor(), torch::zeros({n}, options), torch::zeros({n}, options)};
  float* material = b.material.data_ptr<float>();
  float* material_weight = b.material_weight.data_ptr<float>();
  float* input = b.input.data_ptr<float>();
  float* policy = b.policy.data_ptr<float>();
  float* wdl = b.wdl.data_ptr<float>();
  const auto q = static_cast<float>(q_ratio);
  bool* legal = nullptr;
  if (mask_illegal) {
    b.legal = torch::zeros({n, nn::kPolicySize}, options.dtype(torch::kBool));
    legal = b.legal.data_ptr<bool>();
  }
  for (std::int64_t i = 0; i < n; ++i) {
    const Example& e = examples[std::size_t(i)];
    nn::expand(e.planes, input + i * nn::kInputPlanes * 64);
    float* row = policy + i * nn::kPolicySize;
    for (const auto& [index, p] : e.policy) row[index] = p;
    if (legal) {
      bool* legal_row = legal + i * nn::kPolicySize;
      if (e.legal.empty()) std::fill(legal_row, legal_row + nn::kPolicySize, true);
      for (const std::uint16_t index : e.legal) legal_row[index] = true;
      for (const auto& entry : e.policy) legal_row[entry.first] = true;  // never mask a target
    }
    // The search's win/draw/loss: value = win - loss, draw = draw.
    const float draw = std::clamp(e.root_draw, 0.0f, 1.0f);
    const float win = std::clamp((1 - draw + e.root_value) / 2, 0.0f, 1.0f - draw);
    const float searched[3] = {win, draw, 1 - draw - win};
    const float result[3] = {e.result > 0 ? 1.0f : 0.0f, e.result == 0 ? 1.0f : 0.0f,
                             e.result < 0 ? 1.0f : 0.0f};
    for (int k = 0; k < 3; ++k) wdl[i * 3 + k] = (1 - q) * result[k] + q * searched[k];
    if (e.has_material) {
      material[i] = static_cast<float>(std::tanh(double(e.material) / kMaterialScale));
      material_weight[i] = 1;
    }
  }
  return b;
}

LossTerms compute_losses(const torch::Tensor& policy_logits, const torch::Tensor& wdl_logits,
                         const Batch& batch, const torch::Tensor& material) {
  // In float32 whatever the forward pass ran in (bf16 under autocast).
  torch::Tensor logits = policy_logits.to(torch::kFloat32);
  // A large finite value, not -inf: 0 x -inf would make the target's zeros NaN.
  if (batch.legal.defined()) logits = logits.masked_fill(batch.legal.logical_not(), -1e9);
  const torch::Tensor log_p = torch::log_softmax(logits, 1);
  torch::Tensor policy = -(batch.policy * log_p).sum(1).mean();
  torch::Tensor value =
      -(batch.wdl * torch::log_softmax(wdl_logits.to(torch::kFloat32), 1)).sum(1).mean();
  torch::Tensor material_loss = torch::zeros({}, value.options());
  if (material.defined() && batch.material.defined()) {
    const torch::Tensor error = material.to(torch::kFloat32) - batch.material;
    material_loss =
        (batch.material_weight * error * error).sum() / batch.material_weight.sum().clamp_min(1);
  }
  return {policy, value, material_loss};
}

}  // namespace chessrl::train

#include "batch.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

#include "chessrl/nn/policy_map.h"

namespace chessrl::train {

namespace {

// `batch` with `f` applied to each of its tensors (the undefined ones left so).
template <typename F>
Batch map_tensors(const Batch& batch, F f) {
  Batch out = batch;
  for (torch::Tensor* t : {&out.input, &out.policy, &out.wdl, &out.legal, &out.material,
                           &out.material_weight, &out.reply, &out.reply_weight, &out.moves_left,
                           &out.moves_left_weight})
    if (t->defined()) *t = f(*t);
  return out;
}

}  // namespace

Batch Batch::slice(std::int64_t begin, std::int64_t count) const {
  return map_tensors(*this, [&](const torch::Tensor& t) { return t.narrow(0, begin, count); });
}

Batch Batch::to(const torch::Device& device, bool non_blocking) const {
  return map_tensors(*this,
                     [&](const torch::Tensor& t) { return t.to(device, non_blocking); });
}

Batch make_batch(const std::vector<Example>& examples, bool pin, double q_ratio,
                 bool mask_illegal) {
  const auto n = static_cast<std::int64_t>(examples.size());
  auto options = torch::TensorOptions().dtype(torch::kFloat32).pinned_memory(pin);
  // Every plane a network can take, the chess features included: the network
  // reads the first input_planes(config) of them (torch_network.h).
  Batch b{torch::empty({n, nn::kMaxInputPlanes, 8, 8}, options),
          torch::zeros({n, nn::kPolicySize}, options), torch::empty({n, 3}, options),
          torch::Tensor(), torch::zeros({n}, options), torch::zeros({n}, options),
          torch::zeros({n}, options.dtype(torch::kInt64)), torch::zeros({n}, options),
          torch::zeros({n}, options), torch::zeros({n}, options)};
  float* material = b.material.data_ptr<float>();
  float* material_weight = b.material_weight.data_ptr<float>();
  std::int64_t* reply = b.reply.data_ptr<std::int64_t>();
  float* reply_weight = b.reply_weight.data_ptr<float>();
  float* moves_left = b.moves_left.data_ptr<float>();
  float* moves_left_weight = b.moves_left_weight.data_ptr<float>();
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
    nn::expand(e.planes, input + i * nn::kMaxInputPlanes * 64, nn::kMaxInputPlanes);
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
    if (e.reply >= 0 && e.reply < nn::kPolicySize) {
      reply[i] = e.reply;
      reply_weight[i] = 1;
    }
    if (e.plies_left >= 0) {
      moves_left[i] = static_cast<float>(e.plies_left / nn::kMovesLeftScale);
      moves_left_weight[i] = 1;
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
  return {policy, value, material_loss, torch::zeros({}, value.options()),
          torch::zeros({}, value.options())};
}

LossTerms compute_losses(const nn::NetworkOutput& out, const Batch& batch) {
  LossTerms terms = compute_losses(out.policy, out.wdl, batch, out.material);
  // Means over the positions with a target; multiplying by the weight (not
  // selecting rows) keeps the head in the graph when none has one.
  auto masked_mean = [](const torch::Tensor& per_position, const torch::Tensor& weight) {
    return (weight * per_position).sum() / weight.sum().clamp_min(1);
  };
  if (out.reply.defined() && batch.reply.defined()) {
    const torch::Tensor log_p = torch::log_softmax(out.reply.to(torch::kFloat32), 1);
    terms.reply =
        masked_mean(-log_p.gather(1, batch.reply.unsqueeze(1)).squeeze(1), batch.reply_weight);
  }
  if (out.moves_left.defined() && batch.moves_left.defined()) {
    const torch::Tensor huber =
        torch::huber_loss(out.moves_left.to(torch::kFloat32), batch.moves_left,
                          at::Reduction::None, kMovesLeftHuberDelta);
    terms.moves_left = masked_mean(huber, batch.moves_left_weight);
  }
  return terms;
}

}  // namespace chessrl::train

#include "chessrl/nn/torch_network.h"

#include <torch/nn/functional/activation.h>
#include <torch/utils.h>

#include <cstring>
#include <map>
#include <mutex>

#include "chessrl/core/error.h"
#include "chessrl/nn/encoding.h"
#include "chessrl/nn/policy_map.h"

namespace chessrl::nn {

namespace F = torch::nn::functional;

ConvBlockImpl::ConvBlockImpl(const ConvBlockConfig& c) {
  conv_ = register_module(
      "conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(c.in_channels, c.out_channels, c.kernel)
                                    .padding(c.kernel / 2)
                                    .bias(false)));
  bn_ = register_module("bn", torch::nn::BatchNorm2d(c.out_channels));
}

namespace {

std::string shape_text(c10::IntArrayRef shape);  // below

// conv then batch norm == one convolution with scaled weights and a bias.
void fold_into(torch::nn::Conv2d& conv, torch::nn::BatchNorm2d& bn) {
  torch::NoGradGuard no_grad;
  const auto scale = bn->weight / torch::sqrt(bn->running_var + bn->options.eps());
  conv->weight.mul_(scale.view({-1, 1, 1, 1}));
  torch::Tensor bias = bn->bias - bn->running_mean * scale;
  if (conv->bias.defined()) bias = bias + conv->bias * scale;
  conv->bias = bias;
}

}  // namespace

torch::Tensor ConvBlockImpl::forward(const torch::Tensor& x) {
  return folded_ ? torch::relu(conv_(x)) : torch::relu(bn_(conv_(x)));
}

void ConvBlockImpl::fold_batchnorm() {
  if (folded_) return;
  fold_into(conv_, bn_);
  folded_ = true;
}

ResidualBlockImpl::ResidualBlockImpl(const ResidualBlockConfig& c) : config_(c) {
  auto conv = [&] {
    return torch::nn::Conv2d(
        torch::nn::Conv2dOptions(c.filters, c.filters, 3).padding(1).bias(false));
  };
  conv1_ = register_module("conv1", conv());
  bn1_ = register_module("bn1", torch::nn::BatchNorm2d(c.filters));
  conv2_ = register_module("conv2", conv());
  bn2_ = register_module("bn2", torch::nn::BatchNorm2d(c.filters));
  if (c.se_channels > 0) {
    se_fc1_ = register_module("se_fc1", torch::nn::Linear(c.filters, c.se_channels));
    se_fc2_ = register_module("se_fc2", torch::nn::Linear(c.se_channels, 2 * c.filters));
  }
  if (c.global_pool)
    gpool_fc_ = register_module("gpool_fc", torch::nn::Linear(2 * c.filters, c.filters));
}

void ResidualBlockImpl::fold_batchnorm() {
  if (folded_) return;
  fold_into(conv1_, bn1_);
  fold_into(conv2_, bn2_);
  folded_ = true;
}

torch::Tensor ResidualBlockImpl::forward(const torch::Tensor& x) {
  // Folding changes conv1 and conv2 but not their outputs, so the pooling
  // between them sees the same values either way.
  torch::Tensor y = folded_ ? torch::relu(conv1_(x)) : torch::relu(bn1_(conv1_(x)));
  if (config_.global_pool) {
    const torch::Tensor pooled = torch::cat({y.mean({2, 3}), y.amax({2, 3})}, 1);
    y = y + gpool_fc_(pooled).view({y.size(0), config_.filters, 1, 1});
  }
  y = folded_ ? conv2_(y) : bn2_(conv2_(y));
  if (config_.se_channels > 0) {
    torch::Tensor s = y.mean({2, 3});
    s = se_fc2_(torch::relu(se_fc1_(s)));
    auto halves = s.chunk(2, 1);
    const auto n = y.size(0);
    y = torch::sigmoid(halves[0]).view({n, config_.filters, 1, 1}) * y +
        halves[1].view({n, config_.filters, 1, 1});
  }
  return torch::relu(x + y);
}

PolicyHeadImpl::PolicyHeadImpl(const PolicyHeadConfig& c) {
  conv_ = register_module("conv", ConvBlock(ConvBlockConfig{c.filters, c.filters, 3}));
  planes_ = register_module(
      "planes", torch::nn::Conv2d(torch::nn::Conv2dOptions(c.filters, kPolicyPlanes, 1)));
}

torch::Tensor PolicyHeadImpl::forward(const torch::Tensor& x) {
  // [N, 73, 8, 8] flattened plane-major: index = plane * 64 + square.
  return planes_(conv_(x)).flatten(1);
}

ValueHeadImpl::ValueHeadImpl(const ValueHeadConfig& c) {
  conv_ = register_module("conv", ConvBlock(ConvBlockConfig{c.filters, c.channels, 1}));
  fc1_ = register_module("fc1", torch::nn::Linear(c.channels * 64, c.hidden));
  fc2_ = register_module("fc2", torch::nn::Linear(c.hidden, 3));
  if (c.material) material_ = register_module("material", torch::nn::Linear(c.hidden, 1));
  if (c.moves_left)
    moves_left_ = register_module("moves_left", torch::nn::Linear(c.hidden, 1));
}

ValueHeadOutput ValueHeadImpl::forward(const torch::Tensor& x, bool training_heads) {
  const torch::Tensor hidden = torch::relu(fc1_(conv_(x).flatten(1)));
  ValueHeadOutput out{fc2_(hidden), torch::Tensor(), torch::Tensor()};
  if (!material_.is_empty()) out.material = torch::tanh(material_(hidden)).squeeze(1);
  if (training_heads && !moves_left_.is_empty()) out.moves_left = moves_left_(hidden).squeeze(1);
  return out;
}

NetworkImpl::NetworkImpl(const NetworkConfig& c) : config_(c) {
  input_ = register_module("input", ConvBlock(ConvBlockConfig{input_planes(c), c.filters, 3}));
  tower_ = register_module("tower", torch::nn::ModuleList());
  const int se_channels = c.se_ratio > 0 ? c.filters / c.se_ratio : 0;
  for (int i = 0; i < c.blocks; ++i)
    tower_->push_back(
        ResidualBlock(ResidualBlockConfig{c.filters, se_channels, c.pools_globally(i)}));
  policy_ = register_module("policy", PolicyHead(PolicyHeadConfig{c.filters}));
  value_ = register_module("value",
                           ValueHead(ValueHeadConfig{c.filters, c.value_channels, c.value_hidden,
                                                     c.material_head != 0,
                                                     c.moves_left_head != 0}));
  if (c.reply_head) reply_ = register_module("reply", PolicyHead(PolicyHeadConfig{c.filters}));
}

NetworkOutput NetworkImpl::forward(const torch::Tensor& x, bool training_heads) {
  const std::int64_t planes = input_planes(config_);
  if (x.dim() != 4 || x.size(1) < planes)
    throw Error("network " + config_.name() + " takes " + std::to_string(planes) +
                " input planes; the batch has shape " + shape_text(x.sizes()));
  torch::Tensor h = input_(x.size(1) == planes ? x : x.narrow(1, 0, planes));
  for (const auto& block : *tower_) h = block->as<ResidualBlockImpl>()->forward(h);
  ValueHeadOutput value = value_(h, training_heads);
  NetworkOutput out{policy_(h), value.wdl, value.material, torch::Tensor(), value.moves_left};
  if (training_heads && !reply_.is_empty()) out.reply = reply_(h);
  return out;
}

void NetworkImpl::fold_batchnorm() {
  if (folded_) return;
  input_->fold_batchnorm();
  for (const auto& block : *tower_) block->as<ResidualBlockImpl>()->fold_batchnorm();
  policy_->fold_batchnorm();
  value_->fold_batchnorm();
  if (!reply_.is_empty()) reply_->fold_batchnorm();
  folded_ = true;
}

Network make_network(const NetworkConfig& config, std::uint64_t seed) {
  // Module constructors draw from LibTorch's global generator.
  static std::mutex seed_mutex;
  std::lock_guard lock(seed_mutex);
  torch::manual_seed(seed);
  return Network(config);
}

namespace {

std::vector<std::pair<std::string, torch::Tensor>> named_state(Network& network) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& p : network->named_parameters(true)) out.emplace_back(p.key(), p.value());
  for (const auto& b : network->named_buffers(true)) out.emplace_back(b.key(), b.value());
  return out;
}

std::string shape_text(c10::IntArrayRef shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

Checkpoint to_checkpoint(Network& network, ModelInfo info) {
  if (network->folded())
    throw Error("to_checkpoint: the network's batch norms are folded (an inference copy)");
  Checkpoint c;
  info.config = network->config();
  c.info = std::move(info);
  torch::NoGradGuard no_grad;
  for (auto& [name, tensor] : named_state(network)) {
    NamedTensor t;
    t.name = name;
    torch::Tensor cpu;
    if (tensor.scalar_type() == torch::kLong) {
      t.type = TensorType::kInt64;
      cpu = tensor.detach().to(torch::kCPU).contiguous();
    } else {
      t.type = TensorType::kFloat32;
      cpu = tensor.detach().to(torch::kCPU, torch::kFloat).contiguous();
    }
    t.shape.assign(cpu.sizes().begin(), cpu.sizes().end());
    t.data.resize(size_t(cpu.numel()) * cpu.element_size());
    std::memcpy(t.data.data(), cpu.data_ptr(), t.data.size());
    c.tensors.push_back(std::move(t));
  }
  return c;
}

Result<void> load_weights(Network& network, const Checkpoint& checkpoint) {
  const NetworkConfig& have = network->config();
  const NetworkConfig& want = checkpoint.info.config;
  if (!(have == want))
    return fail("checkpoint is for a " + want.name() + " network, not " + have.name() + " (" +
                want.difference(have) + ")");
  std::map<std::string, const NamedTensor*> by_name;
  for (const NamedTensor& t : checkpoint.tensors) by_name[t.name] = &t;
  auto state = named_state(network);
  // Check everything before copying anything, so a failure changes nothing.
  for (auto& [name, tensor] : state) {
    auto it = by_name.find(name);
    if (it == by_name.end()) return fail("checkpoint lacks tensor '" + name + "'");
    const NamedTensor& t = *it->second;
    if (!std::equal(t.shape.begin(), t.shape.end(), tensor.sizes().begin(), tensor.sizes().end()))
      return fail("checkpoint tensor '" + name + "' has shape " + shape_text(t.shape) +
                  ", the network's is " + shape_text(tensor.sizes()));
    const bool want_long = tensor.scalar_type() == torch::kLong;
    if (want_long != (t.type == TensorType::kInt64))
      return fail("checkpoint tensor '" + name + "' has the wrong element type");
  }
  if (by_name.size() != state.size()) {
    for (const NamedTensor& t : checkpoint.tensors) {
      bool known = false;
      for (auto& entry : state) known = known || entry.first == t.name;
      if (!known) return fail("checkpoint has tensor '" + t.name + "' that the network does not");
    }
    return fail("checkpoint repeats a tensor name");
  }
  torch::NoGradGuard no_grad;
  for (auto& [name, tensor] : state) {
    const NamedTensor& t = *by_name[name];
    auto source = torch::from_blob(const_cast<std::byte*>(t.data.data()), t.shape,
                                   t.type == TensorType::kInt64 ? torch::kLong : torch::kFloat);
    tensor.copy_(source);
  }
  return {};
}

Result<Network> network_from_checkpoint(const Checkpoint& checkpoint, const ModelLimits& limits) {
  // Before anything is allocated: a header naming a huge network, or weights
  // that do not add up to it, must not cost its size in memory.
  if (auto r = check_model(checkpoint, limits); !r) return fail(r.error());
  Network network(checkpoint.info.config);
  if (auto r = load_weights(network, checkpoint); !r) return fail(r.error());
  return network;
}

}  // namespace chessrl::nn

#include "chessrl/nn/model_limits.h"

#include <string_view>
#include <unordered_map>

#include "chessrl/nn/encoding.h"
#include "chessrl/nn/policy_map.h"

namespace chessrl::nn {
namespace {

// The layers of torch_network.cpp, by the names LibTorch gives their tensors.
class SpecList {
 public:
  void add(std::string name, std::vector<std::int64_t> shape,
           TensorType type = TensorType::kFloat32) {
    out_.push_back({std::move(name), type, std::move(shape)});
  }
  void batch_norm(const std::string& prefix, std::int64_t channels) {
    for (const char* name : {".weight", ".bias", ".running_mean", ".running_var"})
      add(prefix + name, {channels});
    add(prefix + ".num_batches_tracked", {}, TensorType::kInt64);
  }
  // ConvBlockImpl: a convolution without bias, batch norm.
  void conv_block(const std::string& prefix, std::int64_t in, std::int64_t out, std::int64_t k) {
    add(prefix + ".conv.weight", {out, in, k, k});
    batch_norm(prefix + ".bn", out);
  }
  void linear(const std::string& prefix, std::int64_t in, std::int64_t out) {
    add(prefix + ".weight", {out, in});
    add(prefix + ".bias", {out});
  }
  std::vector<TensorSpec> take() { return std::move(out_); }

 private:
  std::vector<TensorSpec> out_;
};

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

std::int64_t element_bytes(TensorType type) { return type == TensorType::kFloat32 ? 4 : 8; }

// The first tensor of `tensors` that is not one of `specs` (by name, shape,
// type and data size), else the first of `specs` missing; "" when they match.
std::string first_tensor_problem(const std::vector<NamedTensor>& tensors,
                                 const std::vector<TensorSpec>& specs, const std::string& net) {
  std::unordered_map<std::string_view, std::pair<const TensorSpec*, bool>> expected;
  for (const TensorSpec& spec : specs) expected.emplace(spec.name, std::make_pair(&spec, false));
  for (const NamedTensor& t : tensors) {
    auto it = expected.find(t.name);
    if (it == expected.end())
      return "checkpoint has tensor '" + t.name + "' that a " + net + " network does not";
    auto& [spec, seen] = it->second;
    if (seen) return "checkpoint repeats tensor '" + t.name + "'";
    seen = true;
    if (t.shape != spec->shape)
      return "checkpoint tensor '" + t.name + "' has shape " + shape_text(t.shape) + ", a " + net +
             " network's is " + shape_text(spec->shape);
    if (t.type != spec->type)
      return "checkpoint tensor '" + t.name + "' has the wrong element type";
    if (std::int64_t(t.data.size()) != spec->bytes())
      return "checkpoint tensor '" + t.name + "' holds " +
             with_thousands(std::int64_t(t.data.size())) + " bytes; its shape " +
             shape_text(spec->shape) + " needs " + with_thousands(spec->bytes());
  }
  for (const TensorSpec& spec : specs)
    if (!expected.at(spec.name).second) return "checkpoint lacks tensor '" + spec.name + "'";
  return "";
}

}  // namespace

std::int64_t TensorSpec::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::int64_t TensorSpec::bytes() const { return numel() * element_bytes(type); }

std::vector<TensorSpec> network_tensors(const NetworkConfig& c) {
  const std::int64_t f = c.filters;
  SpecList specs;
  specs.conv_block("input", input_planes(c), f, 3);
  const std::int64_t se = c.se_ratio > 0 ? f / c.se_ratio : 0;
  for (int i = 0; i < c.blocks; ++i) {
    const std::string block = "tower." + std::to_string(i);
    specs.add(block + ".conv1.weight", {f, f, 3, 3});
    specs.batch_norm(block + ".bn1", f);
    specs.add(block + ".conv2.weight", {f, f, 3, 3});
    specs.batch_norm(block + ".bn2", f);
    if (se > 0) {
      specs.linear(block + ".se_fc1", f, se);
      specs.linear(block + ".se_fc2", se, 2 * f);
    }
    if (c.pools_globally(i)) specs.linear(block + ".gpool_fc", 2 * f, f);
  }
  specs.conv_block("policy.conv", f, f, 3);
  specs.add("policy.planes.weight", {kPolicyPlanes, f, 1, 1});
  specs.add("policy.planes.bias", {kPolicyPlanes});
  specs.conv_block("value.conv", f, c.value_channels, 1);
  specs.linear("value.fc1", std::int64_t(c.value_channels) * 64, c.value_hidden);
  specs.linear("value.fc2", c.value_hidden, 3);
  if (c.material_head) specs.linear("value.material", c.value_hidden, 1);
  if (c.moves_left_head) specs.linear("value.moves_left", c.value_hidden, 1);
  if (c.reply_head) {
    specs.conv_block("reply.conv", f, f, 3);
    specs.add("reply.planes.weight", {kPolicyPlanes, f, 1, 1});
    specs.add("reply.planes.bias", {kPolicyPlanes});
  }
  return specs.take();
}

ModelSize model_size(const NetworkConfig& config) {
  ModelSize size;
  for (const TensorSpec& t : network_tensors(config)) {
    size.parameters += t.numel();
    size.bytes += t.bytes();
  }
  return size;
}

std::string with_thousands(std::int64_t value) {
  // The magnitude as unsigned, so the most negative value has one too.
  const std::uint64_t magnitude =
      value < 0 ? std::uint64_t(-(value + 1)) + 1 : std::uint64_t(value);
  const std::string digits = std::to_string(magnitude);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

Result<void> check_model(const Checkpoint& checkpoint, const ModelLimits& limits) {
  const ModelInfo& info = checkpoint.info;
  const NetworkConfig& config = info.config;
  const std::string model =
      info.version > 0 ? "model v" + std::to_string(info.version) : std::string("the model");
  if (auto valid = config.validate(); !valid.ok())
    return fail(model + ": " + valid.error() + "; refused");
  const std::string net = config.name();

  // (a) The ceiling, from the header alone.
  const ModelSize need = model_size(config);
  if (limits.max_parameters > 0 && need.parameters > limits.max_parameters) {
    return fail(model + " asks for a " + net + " network = " + with_thousands(need.parameters) +
                " parameters (" + with_thousands(need.bytes) + " bytes); the ceiling is " +
                with_thousands(limits.max_parameters) +
                " parameters (--max-model-params); refused");
  }

  // (b) The weights present against what the header names: their bytes, and
  // the first tensor that differs (named in either message).
  const std::vector<TensorSpec> specs = network_tensors(config);
  const std::string problem = first_tensor_problem(checkpoint.tensors, specs, net);
  std::int64_t present = 0;
  for (const NamedTensor& t : checkpoint.tensors) present += std::int64_t(t.data.size());
  if (present < need.bytes) {
    return fail(model + "'s weights are " + with_thousands(present) + " bytes in " +
                std::to_string(checkpoint.tensors.size()) + " tensor(s); a " + net +
                " network needs " + with_thousands(need.bytes) + " bytes in " +
                std::to_string(specs.size()) + " (" +
                (problem.empty() ? "truncated, or not this architecture" : problem) + "); refused");
  }
  if (!problem.empty()) return fail(model + ": " + problem + "; refused");
  return {};
}

}  // namespace chessrl::nn

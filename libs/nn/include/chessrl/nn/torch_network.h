// The network in LibTorch: a residual tower with policy and value heads, and
// its conversion to and from a Checkpoint. Includes LibTorch: only libs/nn and
// libs/train include this header. Modules follow LibTorch's rules: not
// thread-safe while training; forward() under eval() + NoGradGuard/InferenceMode
// may run from several threads at once.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include "chessrl/core/result.h"
#include "chessrl/nn/checkpoint.h"
#include "chessrl/nn/model_limits.h"
#include "chessrl/nn/network_config.h"

namespace chessrl::nn {

// A 3x3 convolution, batch norm, ReLU.
struct ConvBlockConfig {
  int in_channels;
  int out_channels;
  int kernel = 3;
};
class ConvBlockImpl : public torch::nn::Module {
 public:
  explicit ConvBlockImpl(const ConvBlockConfig& config);
  torch::Tensor forward(const torch::Tensor& x);
  void fold_batchnorm();

 private:
  torch::nn::Conv2d conv_{nullptr};
  torch::nn::BatchNorm2d bn_{nullptr};
  bool folded_ = false;
};
TORCH_MODULE(ConvBlock);

// Two 3x3 convolutions with batch norm, optional squeeze-excitation, a skip
// connection, ReLU. With global pooling (KataGo's), the first convolution's
// output (after its ReLU) is pooled over the 64 squares, mean and max per
// channel, and a dense layer turns those 2 x filters numbers into a bias per
// channel, added on every square before the second convolution: each square
// learns what happens elsewhere on the board within one block.
struct ResidualBlockConfig {
  int filters;
  int se_channels = 0;  // 0: no squeeze-excitation
  bool global_pool = false;
};
class ResidualBlockImpl : public torch::nn::Module {
 public:
  explicit ResidualBlockImpl(const ResidualBlockConfig& config);
  torch::Tensor forward(const torch::Tensor& x);
  void fold_batchnorm();

 private:
  ResidualBlockConfig config_;
  bool folded_ = false;
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr};
  // Squeeze-excitation (lc0 style): pooled channels -> hidden -> a scale and a
  // bias per channel.
  torch::nn::Linear se_fc1_{nullptr}, se_fc2_{nullptr};
  torch::nn::Linear gpool_fc_{nullptr};  // global pooling: [mean, max] -> a bias per channel
};
TORCH_MODULE(ResidualBlock);

// Policy: a 3x3 conv block, then a 1x1 convolution to the 73 move planes,
// flattened to kPolicySize logits in policy_map.h's order.
struct PolicyHeadConfig {
  int filters;
};
class PolicyHeadImpl : public torch::nn::Module {
 public:
  explicit PolicyHeadImpl(const PolicyHeadConfig& config);
  torch::Tensor forward(const torch::Tensor& x);
  void fold_batchnorm() { conv_->fold_batchnorm(); }

 private:
  ConvBlock conv_{nullptr};
  torch::nn::Conv2d planes_{nullptr};
};
TORCH_MODULE(PolicyHead);

// Value: a 1x1 conv block to `channels`, a hidden dense layer, 3 logits
// (win, draw, loss for the side to move); with `material`, one more output
// off the hidden layer: tanh of the material lead the trainer teaches it.
// With `moves_left`, another (training only, computed when asked): the plies
// left in the game / kMovesLeftScale, unbounded.
struct ValueHeadConfig {
  int filters;
  int channels;
  int hidden;
  bool material = false;
  bool moves_left = false;
};
struct ValueHeadOutput {
  torch::Tensor wdl;         // [N, 3] logits
  torch::Tensor material;    // [N] in (-1, 1); undefined without the material head
  torch::Tensor moves_left;  // [N]; undefined without the head or when not asked for
};
class ValueHeadImpl : public torch::nn::Module {
 public:
  explicit ValueHeadImpl(const ValueHeadConfig& config);
  ValueHeadOutput forward(const torch::Tensor& x, bool training_heads = false);
  void fold_batchnorm() { conv_->fold_batchnorm(); }

 private:
  ConvBlock conv_{nullptr};
  torch::nn::Linear fc1_{nullptr}, fc2_{nullptr}, material_{nullptr}, moves_left_{nullptr};
};
TORCH_MODULE(ValueHead);

// Logits, not probabilities: the losses want log-softmax, inference softmax.
// The training-only heads (reply, moves_left) are computed only when forward()
// is asked for them: inference pays nothing for them.
struct NetworkOutput {
  torch::Tensor policy;    // [N, kPolicySize]
  torch::Tensor wdl;       // [N, 3]
  torch::Tensor material;  // [N], tanh; undefined when the network has no material head
  // [N, kPolicySize]: the opponent's reply, indexed from the opponent's point
  // of view (policy_index(reply, opponent)); undefined without reply_head.
  torch::Tensor reply;
  torch::Tensor moves_left;  // [N]: plies left / kMovesLeftScale; undefined without moves_left_head
};

// Plies of game left that the moves-left head's output 1.0 stands for (lc0's
// moves-left head regresses plies left over 20 the same way).
inline constexpr double kMovesLeftScale = 20.0;

class NetworkImpl : public torch::nn::Module {
 public:
  // Precondition: config.validate() passed.
  explicit NetworkImpl(const NetworkConfig& config);
  // x: [N, P, 8, 8] float, P at least input_planes(config) (encoding.h); the
  // network reads the first input_planes(config) planes, so a batch expanded
  // with the chess features serves a network without them too. With `training_heads`, also the
  // training-only heads the config has (reply, moves left); the trainer asks,
  // inference does not.
  NetworkOutput forward(const torch::Tensor& x, bool training_heads = false);
  const NetworkConfig& config() const { return config_; }

  // For inference only: scales every convolution by its batch norm's
  // statistics and drops the batch norms (fewer passes over the activations).
  // The result must not be trained or saved (to_checkpoint refuses it).
  void fold_batchnorm();
  bool folded() const { return folded_; }

 private:
  NetworkConfig config_;
  bool folded_ = false;
  ConvBlock input_{nullptr};
  torch::nn::ModuleList tower_{nullptr};
  PolicyHead policy_{nullptr};
  ValueHead value_{nullptr};
  PolicyHead reply_{nullptr};  // the opponent's reply: the policy head's shape
};
TORCH_MODULE(Network);

// A network with fresh weights, initialised from `seed` (reproducible).
Network make_network(const NetworkConfig& config, std::uint64_t seed);

// The network's parameters and buffers (batch-norm statistics), on the CPU as
// float32, with `info` (whose config is replaced by the network's). Throws
// chessrl::Error for a folded network.
Checkpoint to_checkpoint(Network& network, ModelInfo info);

// Copies a checkpoint's weights into `network`. Fails, naming the difference,
// when the checkpoint's architecture is not the network's, or a tensor is
// missing, extra or of another shape. On failure the network is unchanged.
Result<void> load_weights(Network& network, const Checkpoint& checkpoint);

// A network built from the checkpoint's architecture with its weights. Runs
// check_model(checkpoint, limits) first (model_limits.h), so a checkpoint over
// the ceiling or whose weights do not match its architecture is refused, naming
// the numbers, before any tensor is allocated.
Result<Network> network_from_checkpoint(const Checkpoint& checkpoint,
                                        const ModelLimits& limits = {});

}  // namespace chessrl::nn

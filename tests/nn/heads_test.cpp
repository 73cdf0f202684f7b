// The training-only heads (-reply: the opponent's reply, -mlh: moves left):
// their shapes, computed only when forward() asks for them (inference pays
// nothing), their tensors in network_tensors(), checkpoints and batch-norm
// folding with them, and an old checkpoint without them refused by a network
// with them, naming the field.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "chessrl/nn/encoding.h"
#include "chessrl/nn/model_limits.h"
#include "chessrl/nn/policy_map.h"
#include "chessrl/nn/torch_backend.h"
#include "chessrl/nn/torch_network.h"
#include "nn_test_util.h"
#include "torch_test_util.h"

namespace chessrl::nn {
namespace {

using testing::batch_of;

NetworkConfig net(const std::string& name) { return parse_network_name(name).value_or_throw(); }

const std::vector<std::string> kNames = {"2x16-reply", "2x16-mlh", "2x16-reply-mlh",
                                         "2x16-se4-reply-mlh"};

TEST(NetworkHeads, ShapesAndOnlyWhenAsked) {
  auto positions = testing::random_positions(11, 5);
  const torch::Tensor x = batch_of(positions);
  for (const std::string& name : kNames) {
    const NetworkConfig config = net(name);
    Network network = make_network(config, 1);
    network->train();
    NetworkOutput out = network->forward(x, /*training_heads=*/true);
    EXPECT_EQ(out.policy.sizes(), (std::vector<std::int64_t>{5, kPolicySize})) << name;
    EXPECT_EQ(out.reply.defined(), config.reply_head == 1) << name;
    EXPECT_EQ(out.moves_left.defined(), config.moves_left_head == 1) << name;
    if (out.reply.defined()) {
      EXPECT_EQ(out.reply.sizes(), (std::vector<std::int64_t>{5, kPolicySize})) << name;
      EXPECT_TRUE(torch::isfinite(out.reply).all().item<bool>()) << name;
      EXPECT_FALSE(torch::equal(out.reply, out.policy)) << name << ": a head of its own";
    }
    if (out.moves_left.defined()) {
      EXPECT_EQ(out.moves_left.sizes(), (std::vector<std::int64_t>{5})) << name;
    }

    // Inference (no training heads asked for) computes neither, and the
    // outputs it does compute are the same.
    network->eval();
    torch::NoGradGuard no_grad;
    NetworkOutput inference = network->forward(x);
    EXPECT_FALSE(inference.reply.defined()) << name;
    EXPECT_FALSE(inference.moves_left.defined()) << name;
    NetworkOutput both = network->forward(x, true);
    EXPECT_TRUE(torch::equal(inference.policy, both.policy)) << name;
    EXPECT_TRUE(torch::equal(inference.wdl, both.wdl)) << name;
  }
  // Without the heads, asking gives nothing.
  Network plain = make_network(net("2x16"), 1);
  NetworkOutput out = plain->forward(x, true);
  EXPECT_FALSE(out.reply.defined());
  EXPECT_FALSE(out.moves_left.defined());
}

TEST(NetworkHeads, NetworkTensorsListTheHeads) {
  for (const std::string& name : kNames) {
    const NetworkConfig config = net(name);
    Network network = make_network(config, 1);
    const Checkpoint actual = to_checkpoint(network, {});
    std::map<std::string, std::vector<std::int64_t>> have, computed;
    for (const NamedTensor& t : actual.tensors) have[t.name] = t.shape;
    for (const TensorSpec& t : network_tensors(config)) computed[t.name] = t.shape;
    EXPECT_EQ(computed, have) << name;
    EXPECT_TRUE(check_model(actual, {}).ok()) << name;
    EXPECT_EQ(have.count("reply.planes.weight"), std::size_t(config.reply_head)) << name;
    EXPECT_EQ(have.count("value.moves_left.weight"), std::size_t(config.moves_left_head)) << name;
  }
  // The reply head costs a policy head's parameters; the moves-left head one
  // unit off the value head's hidden layer.
  const auto base = model_size(net("2x16")).parameters;
  const auto conv = model_size(net("2x16")).parameters - model_size(net("1x16")).parameters;
  EXPECT_GT(model_size(net("2x16-reply")).parameters - base, conv / 2);
  EXPECT_EQ(model_size(net("2x16-mlh")).parameters - base, NetworkConfig{}.value_hidden + 1);
}

TEST(NetworkHeads, CheckpointRoundTripAndFolding) {
  auto positions = testing::random_positions(12, 8);
  const torch::Tensor x = batch_of(positions);
  for (const std::string& name : kNames) {
    const NetworkConfig config = net(name);
    Network network = make_network(config, 3);
    network->train();
    {
      torch::NoGradGuard no_grad;
      for (int i = 0; i < 3; ++i) network->forward(x * float(i + 1), true);
    }
    network->eval();
    auto parsed = parse_checkpoint(serialize_checkpoint(to_checkpoint(network, {})));
    ASSERT_TRUE(parsed.ok()) << parsed.error();
    EXPECT_EQ(parsed->info.config, config) << name;
    Network loaded = network_from_checkpoint(*parsed).value_or_throw();
    loaded->eval();
    torch::NoGradGuard no_grad;
    NetworkOutput a = network->forward(x, true), b = loaded->forward(x, true);
    if (config.reply_head) {
      EXPECT_TRUE(torch::equal(a.reply, b.reply)) << name;
    }
    if (config.moves_left_head) {
      EXPECT_TRUE(torch::equal(a.moves_left, b.moves_left)) << name;
    }

    loaded->fold_batchnorm();
    NetworkOutput folded = loaded->forward(x, true);
    EXPECT_TRUE(torch::allclose(a.policy, folded.policy, 1e-4, 1e-4)) << name;
    if (config.reply_head) {
      EXPECT_TRUE(torch::allclose(a.reply, folded.reply, 1e-4, 1e-4)) << name;
    }
    if (config.moves_left_head) {
      EXPECT_TRUE(torch::allclose(a.moves_left, folded.moves_left, 1e-4, 1e-4)) << name;
    }

    // The inference backend takes the checkpoint (the heads' weights ride
    // along unused).
    TorchBackendOptions options;
    options.threads = 1;
    EXPECT_TRUE(make_torch_backend(*parsed, options).ok()) << name;
  }
}

TEST(NetworkHeads, OldCheckpointWithoutTheHeadsIsRefusedByName) {
  Network old_net = make_network(net("2x16"), 1);
  const Checkpoint old_checkpoint = to_checkpoint(old_net, {});
  Network with_reply = make_network(net("2x16-reply"), 1);
  auto r = load_weights(with_reply, old_checkpoint);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "checkpoint is for a 2x16 network, not 2x16-reply (reply_head 0 vs 1)");
  Network with_mlh = make_network(net("2x16-mlh"), 1);
  r = load_weights(with_mlh, old_checkpoint);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "checkpoint is for a 2x16 network, not 2x16-mlh (moves_left_head 0 vs 1)");
  // And loads into the network it names.
  EXPECT_TRUE(network_from_checkpoint(old_checkpoint).ok());
}

}  // namespace
}  // namespace chessrl::nn

#include <gtest/gtest.h>
#include <torch/nn/functional/activation.h>
#include <torch/optim/adam.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "chessrl/chess/movegen.h"
#include "chessrl/core/error.h"
#include "chessrl/nn/encoding.h"
#include "chessrl/nn/policy_map.h"
#include "chessrl/nn/torch_network.h"
#include "nn_test_util.h"
#include "torch_test_util.h"

namespace chessrl::nn {
namespace {

using testing::batch_of;

// Moves the batch-norm statistics away from their initial 0/1, as training does.
void train_a_little(Network& net, const torch::Tensor& x) {
  net->train();
  torch::NoGradGuard no_grad;
  for (int i = 0; i < 3; ++i) net->forward(x * float(i + 1));
  net->eval();
}

TEST(Network, OutputShapes) {
  auto positions = testing::random_positions(1, 5);
  const torch::Tensor x = batch_of(positions);
  for (NetworkConfig config : {NetworkConfig{2, 16}, NetworkConfig{1, 32, 4, 8, 32}}) {
    Network net = make_network(config, 1);
    net->eval();
    torch::NoGradGuard no_grad;
    NetworkOutput out = net->forward(x);
    EXPECT_EQ(out.policy.sizes(), (std::vector<std::int64_t>{5, kPolicySize})) << config.name();
    EXPECT_EQ(out.wdl.sizes(), (std::vector<std::int64_t>{5, 3})) << config.name();
    EXPECT_TRUE(torch::isfinite(out.policy).all().item<bool>());
    // The material head, on by default: one value in (-1, 1) per position.
    ASSERT_TRUE(out.material.defined());
    EXPECT_EQ(out.material.sizes(), (std::vector<std::int64_t>{5}));
    EXPECT_LT(out.material.abs().max().item<float>(), 1.0f);
  }
  NetworkConfig without{2, 16};
  without.material_head = 0;
  Network net = make_network(without, 1);
  net->eval();
  torch::NoGradGuard no_grad;
  EXPECT_FALSE(net->forward(x).material.defined());
}

TEST(Network, SeedMakesTheSameWeights) {
  Network a = make_network({2, 16}, 7), b = make_network({2, 16}, 7), c = make_network({2, 16}, 8);
  auto pa = a->parameters(), pb = b->parameters(), pc = c->parameters();
  ASSERT_EQ(pa.size(), pb.size());
  bool all_equal = true, any_differs = false;
  for (size_t i = 0; i < pa.size(); ++i) {
    all_equal = all_equal && torch::equal(pa[i], pb[i]);
    any_differs = any_differs || !torch::equal(pa[i], pc[i]);
  }
  EXPECT_TRUE(all_equal);
  EXPECT_TRUE(any_differs);
}

TEST(Network, CheckpointRoundTripGivesIdenticalOutputs) {
  auto positions = testing::random_positions(2, 16);
  const torch::Tensor x = batch_of(positions);
  NetworkConfig no_material_head{2, 16};
  no_material_head.material_head = 0;
  for (NetworkConfig config : {NetworkConfig{2, 16}, NetworkConfig{2, 16, 4}, no_material_head}) {
    Network net = make_network(config, 3);
    train_a_little(net, x);
    ModelInfo info;
    info.step = 500;
    info.version = 3;
    info.created_ms = unix_millis_now();
    const std::string bytes = serialize_checkpoint(to_checkpoint(net, info));
    auto parsed = parse_checkpoint(bytes);
    ASSERT_TRUE(parsed.ok()) << parsed.error();
    EXPECT_EQ(parsed->info.config, config);
    EXPECT_EQ(parsed->info.step, 500);
    auto loaded = network_from_checkpoint(*parsed);
    ASSERT_TRUE(loaded.ok()) << loaded.error();
    (*loaded)->eval();
    torch::NoGradGuard no_grad;
    NetworkOutput a = net->forward(x), b = (*loaded)->forward(x);
    EXPECT_TRUE(torch::equal(a.policy, b.policy)) << config.name();
    EXPECT_TRUE(torch::equal(a.wdl, b.wdl)) << config.name();
    EXPECT_EQ(a.material.defined(), config.material_head == 1);
    if (a.material.defined()) {
      EXPECT_TRUE(torch::equal(a.material, b.material)) << config.name();
    }

    // And through a file.
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("chessrl_net_" + std::to_string(::getpid()) + ".ckpt"))
                                 .string();
    ASSERT_TRUE(save_checkpoint_file(*parsed, path).ok());
    auto from_file = load_checkpoint_file(path);
    std::filesystem::remove(path);
    ASSERT_TRUE(from_file.ok()) << from_file.error();
    Network reloaded = network_from_checkpoint(*from_file).value_or_throw();
    reloaded->eval();
    NetworkOutput c = reloaded->forward(x);
    EXPECT_TRUE(torch::equal(a.policy, c.policy)) << config.name();
    EXPECT_TRUE(torch::equal(a.wdl, c.wdl)) << config.name();
  }
}

TEST(Network, CheckpointForAnotherArchitectureIsRefused) {
  Network small = make_network({2, 16}, 1);
  const Checkpoint c = to_checkpoint(small, {});
  Network other = make_network({2, 32}, 1);
  const auto before = other->parameters()[0].clone();
  auto r = load_weights(other, c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "checkpoint is for a 2x16 network, not 2x32 (filters 16 vs 32)");
  EXPECT_TRUE(torch::equal(before, other->parameters()[0]));
  // A checkpoint without the material head (made before it) into one with it.
  NetworkConfig old_config{2, 16};
  old_config.material_head = 0;
  Network old_net = make_network(old_config, 1);
  r = load_weights(small, to_checkpoint(old_net, {}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "checkpoint is for a 2x16 network, not 2x16 (material_head 0 vs 1)");

  // A tensor of the wrong shape: named, and nothing is copied.
  Checkpoint bad = c;
  Network target = make_network({2, 16}, 9);
  const auto target_before = target->parameters()[0].clone();
  for (NamedTensor& t : bad.tensors)
    if (t.name == "value.fc2.bias") {
      t.shape = {2};
      t.data.resize(8);
    }
  r = load_weights(target, bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "checkpoint tensor 'value.fc2.bias' has shape [2], the network's is [3]");
  EXPECT_TRUE(torch::equal(target_before, target->parameters()[0]))
      << "unchanged after a failed load";

  Checkpoint missing = c;
  missing.tensors.pop_back();
  r = load_weights(target, missing);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("checkpoint lacks tensor"), std::string::npos) << r.error();

  Checkpoint extra = c;
  extra.tensors.push_back(extra.tensors.back());
  extra.tensors.back().name = "surplus.weight";
  r = load_weights(target, extra);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "checkpoint has tensor 'surplus.weight' that the network does not");
}

TEST(Network, FoldedBatchNormGivesTheSameOutputs) {
  auto positions = testing::random_positions(4, 8);
  const torch::Tensor x = batch_of(positions);
  Network net = make_network({2, 16, 4}, 5);
  train_a_little(net, x);
  const Checkpoint c = to_checkpoint(net, {});
  Network folded = network_from_checkpoint(c).value_or_throw();
  folded->eval();
  folded->fold_batchnorm();
  torch::NoGradGuard no_grad;
  NetworkOutput a = net->forward(x), b = folded->forward(x);
  EXPECT_TRUE(torch::allclose(a.policy, b.policy, 1e-4, 1e-4));
  EXPECT_TRUE(torch::allclose(a.wdl, b.wdl, 1e-4, 1e-4));
  EXPECT_THROW(to_checkpoint(folded, {}), Error);
}

// A tiny network memorises 16 positions with random targets: a random policy
// target among the legal moves and a random game result. Random targets can
// only be fitted by memorising, so the loss falling tells us gradients reach
// every layer and both heads. At the start the loss is about ln(4672) + ln(3)
// = 9.5; a total below 0.15 means the target move and result get, on average,
// about 86% of the probability or more.
TEST(Network, TinyNetworkOverfitsATinyDataSet) {
  auto positions = testing::random_positions(12, 16);
  const torch::Tensor x = batch_of(positions);
  std::mt19937 rng(99);
  torch::Tensor policy_target = torch::zeros({16, kPolicySize});
  torch::Tensor value_target = torch::empty({16}, torch::kLong);
  for (int i = 0; i < 16; ++i) {
    const chess::MoveList moves = chess::legal_moves(positions[i]);
    const chess::Move m = moves[std::uniform_int_distribution<int>(0, moves.size() - 1)(rng)];
    policy_target[i][policy_index(m, positions[i].side_to_move())] = 1.0f;
    value_target[i] = std::uniform_int_distribution<int>(0, 2)(rng);
  }
  Network net = make_network({2, 16}, 11);
  net->train();
  torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(3e-3));
  float first = 0, last = 0;
  for (int step = 0; step < 300; ++step) {
    NetworkOutput out = net->forward(x);
    torch::Tensor policy_loss = -(policy_target * torch::log_softmax(out.policy, 1)).sum(1).mean();
    torch::Tensor value_loss = torch::nll_loss(torch::log_softmax(out.wdl, 1), value_target);
    torch::Tensor loss = policy_loss + value_loss;
    opt.zero_grad();
    loss.backward();
    opt.step();
    (step == 0 ? first : last) = loss.item<float>();
  }
  EXPECT_GT(first, 8.0f);
  EXPECT_LT(last, 0.15f) << "started at " << first;
}

}  // namespace
}  // namespace chessrl::nn

// The tower's options beyond the plain residual block: the chess feature
// planes at the input (-feat) and global pooling (-gpN), alone and with
// squeeze-excitation; and that networks without them compute exactly what
// they did before the options existed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "chessrl/chess/position.h"
#include "chessrl/core/error.h"
#include "chessrl/nn/checkpoint.h"
#include "chessrl/nn/encoding.h"
#include "chessrl/nn/model_limits.h"
#include "chessrl/nn/policy_map.h"
#include "chessrl/nn/torch_backend.h"
#include "chessrl/nn/torch_network.h"
#include "nn_test_util.h"

namespace chessrl::nn {
namespace {

NetworkConfig net(const std::string& name) { return parse_network_name(name).value_or_throw(); }

torch::Tensor planes_of(const std::vector<std::string>& fens, int planes) {
  torch::Tensor x = torch::empty({std::int64_t(fens.size()), planes, 8, 8});
  for (size_t i = 0; i < fens.size(); ++i) {
    chess::Position pos = chess::Position::from_fen(fens[i]).value_or_throw();
    expand(encode(pos), x.data_ptr<float>() + std::int64_t(i) * planes * 64, planes);
  }
  return x;
}

// Every parameter and buffer set from its name and index alone (no random
// generator, so the figures below do not depend on LibTorch's initialisers),
// on the scale of a trained network's.
void fill_deterministically(Network& network) {
  torch::NoGradGuard no_grad;
  auto fill = [](const std::string& name, torch::Tensor t) {
    if (t.scalar_type() != torch::kFloat) return;
    std::uint64_t h = 1469598103934665603ULL;
    for (char c : name) h = (h ^ std::uint64_t(static_cast<unsigned char>(c))) * 1099511628211ULL;
    const double scale = t.dim() >= 2 ? 1.0 / std::sqrt(double(t.numel() / t.size(0))) : 0.1;
    auto flat = t.view({-1});
    auto a = flat.accessor<float, 1>();
    for (std::int64_t j = 0; j < flat.numel(); ++j) {
      std::uint64_t z = h + std::uint64_t(j) * 0x9E3779B97F4A7C15ULL;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
      z ^= z >> 31;
      const double u = double(z >> 11) / double(1ULL << 53) * 2 - 1;  // [-1, 1)
      double v = scale * u;
      if (name.ends_with("bn1.weight") || name.ends_with("bn2.weight") ||
          name.ends_with("bn.weight"))
        v = 1 + 0.2 * u;
      if (name.ends_with("running_var")) v = 1 + 0.3 * std::abs(u);
      a[j] = float(v);
    }
  };
  for (const auto& p : network->named_parameters(true)) fill(p.key(), p.value());
  for (const auto& b : network->named_buffers(true)) fill(b.key(), b.value());
}

const std::vector<std::string> kFens = {
    std::string(chess::kStartFen),
    "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
    "4k3/8/8/3q4/8/2N5/8/4K3 b - - 0 40",
};

// Networks without the new options give the outputs they gave before the
// options were added (figures printed by this test on the code of that time,
// with these weights; they depend on no random generator).
TEST(NetworkBlocks, OldArchitecturesComputeWhatTheyDid) {
  const torch::Tensor x = planes_of(kFens, kInputPlanes);
  struct Expected {
    const char* net;
    float values[3][7];  // per position: policy[0], [1000], [4000], wdl[0..2], material
  };
  const Expected expected[] = {
      {"2x16",
       {{0.029225f, -0.076278f, -0.077622f, -0.001706f, 0.063321f, 0.075911f, 0.026963f},
        {0.029188f, -0.077081f, -0.076140f, -0.000996f, 0.062764f, 0.076553f, 0.026984f},
        {0.028220f, -0.081624f, -0.075428f, 0.003550f, 0.061745f, 0.074738f, 0.031155f}}},
      {"2x16-se4",
       {{0.028724f, -0.077815f, -0.086295f, 0.005368f, 0.056769f, 0.072727f, 0.028460f},
        {0.028794f, -0.077765f, -0.085479f, 0.006413f, 0.055415f, 0.072345f, 0.029202f},
        {0.019255f, -0.077892f, -0.084822f, 0.012723f, 0.052783f, 0.067001f, 0.032658f}}},
  };
  for (const Expected& e : expected) {
    Network network = make_network(net(e.net), 1);
    fill_deterministically(network);
    network->eval();
    torch::NoGradGuard no_grad;
    const NetworkOutput out = network->forward(x);
    for (int i = 0; i < 3; ++i) {
      const float got[7] = {out.policy[i][0].item<float>(),    out.policy[i][1000].item<float>(),
                            out.policy[i][4000].item<float>(), out.wdl[i][0].item<float>(),
                            out.wdl[i][1].item<float>(),       out.wdl[i][2].item<float>(),
                            out.material[i].item<float>()};
      for (int k = 0; k < 7; ++k)
        EXPECT_NEAR(got[k], e.values[i][k], 2e-5f) << e.net << " position " << i << " output " << k;
    }
  }
}

// Pooling goes in blocks N, 2N, ... counting from 1; the input convolution
// takes the feature planes with -feat; network_tensors() lists exactly what
// the LibTorch network has.
TEST(NetworkBlocks, ShapesAndTensorList) {
  for (const std::string name : {"2x16-feat", "3x16-gp2", "4x16-gp1", "3x16-gp4", "3x16-se4-gp2",
                                 "4x16-se4-gp2-feat", "2x16-se4-gp1-feat-reply-mlh"}) {
    const NetworkConfig config = net(name);
    Network network = make_network(config, 2);
    const Checkpoint c = to_checkpoint(network, {});
    std::map<std::string, std::vector<std::int64_t>> have, listed;
    for (const NamedTensor& t : c.tensors) have[t.name] = t.shape;
    for (const TensorSpec& t : network_tensors(config)) listed[t.name] = t.shape;
    EXPECT_EQ(listed, have) << name;
    EXPECT_TRUE(check_model(c, {}).ok()) << name;
    EXPECT_EQ(have["input.conv.weight"],
              (std::vector<std::int64_t>{16, input_planes(config), 3, 3}))
        << name;
    for (int i = 0; i < config.blocks; ++i) {
      const bool pools = have.contains("tower." + std::to_string(i) + ".gpool_fc.weight");
      EXPECT_EQ(pools, config.global_pool > 0 && (i + 1) % config.global_pool == 0)
          << name << " block " << i;
      if (pools) {
        EXPECT_EQ(have["tower." + std::to_string(i) + ".gpool_fc.weight"],
                  (std::vector<std::int64_t>{16, 32}));
      }
    }
  }
  EXPECT_EQ(input_planes(net("2x16-feat")), kMaxInputPlanes);
  EXPECT_FALSE(net("3x16-gp2").pools_globally(0));
  EXPECT_TRUE(net("3x16-gp2").pools_globally(1));
  EXPECT_FALSE(net("3x16-gp2").pools_globally(2));
  // A pooling interval longer than the tower pools nowhere.
  EXPECT_EQ(model_size(net("3x16-gp4")).parameters, model_size(net("3x16")).parameters);
}

// Moves the batch-norm statistics away from their initial 0/1, as training does.
void train_a_little(Network& network, const torch::Tensor& x) {
  network->train();
  torch::NoGradGuard no_grad;
  for (int i = 0; i < 3; ++i) network->forward(x * float(i + 1));
  network->eval();
}

std::vector<std::string> random_fens(std::uint32_t seed, int count) {
  std::vector<std::string> out;
  for (const chess::Position& p : testing::random_positions(seed, count)) out.push_back(p.fen());
  return out;
}

TEST(NetworkBlocks, ForwardFoldAndCheckpointRoundTrip) {
  const std::vector<std::string> fens = random_fens(8, 12);
  const torch::Tensor x = planes_of(fens, kMaxInputPlanes);
  for (const std::string name : {"2x16-feat", "3x16-gp2", "3x16-se4-gp2", "4x16-se4-gp2-feat"}) {
    const NetworkConfig config = net(name);
    Network network = make_network(config, 4);
    train_a_little(network, x);
    torch::NoGradGuard no_grad;
    const NetworkOutput out = network->forward(x);
    EXPECT_EQ(out.policy.sizes(), (std::vector<std::int64_t>{12, kPolicySize})) << name;
    EXPECT_EQ(out.wdl.sizes(), (std::vector<std::int64_t>{12, 3})) << name;
    EXPECT_TRUE(torch::isfinite(out.policy).all().item<bool>()) << name;
    // Through a checkpoint: the same outputs.
    auto parsed = parse_checkpoint(serialize_checkpoint(to_checkpoint(network, {})));
    ASSERT_TRUE(parsed.ok()) << parsed.error();
    EXPECT_EQ(parsed->info.config, config);
    Network loaded = network_from_checkpoint(*parsed).value_or_throw();
    loaded->eval();
    const NetworkOutput again = loaded->forward(x);
    EXPECT_TRUE(torch::equal(out.policy, again.policy)) << name;
    EXPECT_TRUE(torch::equal(out.wdl, again.wdl)) << name;
    // Folded for inference: the same outputs within rounding.
    loaded->fold_batchnorm();
    const NetworkOutput folded = loaded->forward(x);
    EXPECT_TRUE(torch::allclose(out.policy, folded.policy, 1e-4, 1e-4)) << name;
    EXPECT_TRUE(torch::allclose(out.wdl, folded.wdl, 1e-4, 1e-4)) << name;
  }
}

// The feature planes reach the network (its output depends on them) and only
// a network that takes them reads them; one that does not ignores them.
TEST(NetworkBlocks, InputPlanesTheNetworkTakes) {
  const std::vector<std::string> fens = random_fens(9, 6);
  const torch::Tensor all = planes_of(fens, kMaxInputPlanes);
  const torch::Tensor classic = planes_of(fens, kInputPlanes);
  torch::NoGradGuard no_grad;
  Network old_net = make_network(net("2x16"), 5);
  old_net->eval();
  EXPECT_TRUE(torch::equal(old_net->forward(all).policy, old_net->forward(classic).policy))
      << "a network without the features reads the first 112 planes only";

  Network feat = make_network(net("2x16-feat"), 5);
  feat->eval();
  try {
    feat->forward(classic);
    ADD_FAILURE() << "112 planes for a network that takes 132";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("network 2x16-feat takes 132 input planes"),
              std::string::npos)
        << e.what();
  }
  torch::Tensor blanked = all.clone();
  blanked.narrow(1, kInputPlanes, kFeaturePlanes).zero_();
  EXPECT_FALSE(torch::equal(feat->forward(all).policy, feat->forward(blanked).policy));
}

// The inference backend feeds a -feat network the feature planes it computes
// from the 112 it is given, as the trainer's batches do (folded or not).
TEST(NetworkBlocks, TheBackendComputesTheFeaturePlanes) {
  const std::vector<std::string> fens = random_fens(11, 10);
  const torch::Tensor x = planes_of(fens, kMaxInputPlanes);
  std::vector<InputPlanes> inputs;
  for (const std::string& fen : fens) {
    chess::Position pos = chess::Position::from_fen(fen).value_or_throw();
    inputs.push_back(encode(pos));
  }
  for (const std::string name : {"2x16-feat", "3x16-se4-gp2-feat"}) {
    Network network = make_network(net(name), 12);
    train_a_little(network, x);
    const Checkpoint checkpoint = to_checkpoint(network, {});
    torch::Tensor want;
    {
      torch::NoGradGuard no_grad;
      want = network->forward(x).policy;
    }
    for (bool fold : {false, true}) {
      TorchBackendOptions options;
      options.threads = 1;
      options.fold_batchnorm = fold;
      auto backend = make_torch_backend(checkpoint, options).value_or_throw();
      std::vector<float> logits(inputs.size() * kPolicySize);
      std::vector<Wdl> wdl(inputs.size());
      backend->forward(inputs, logits, wdl);
      const torch::Tensor got = torch::from_blob(logits.data(), want.sizes()).clone();
      EXPECT_TRUE(torch::allclose(got, want, 1e-4, 1e-4)) << name << " fold " << fold;
    }
  }
}

// The pooling branch sees the whole board: changing one square's input
// changes a block's output on every square, which two 3x3 convolutions alone
// cannot do for squares more than two steps away. And gradients reach it.
TEST(NetworkBlocks, GlobalPoolingSpreadsOverTheBoard) {
  torch::manual_seed(3);
  ResidualBlock plain(ResidualBlockConfig{8, 0, false});
  ResidualBlock pooled(ResidualBlockConfig{8, 0, true});
  plain->eval();
  pooled->eval();
  torch::Tensor x = torch::rand({1, 8, 8, 8});
  torch::Tensor poked = x.clone();
  poked.index_put_({0, torch::indexing::Slice(), 0, 0}, 5.0);  // square a1, every channel
  torch::NoGradGuard no_grad;
  auto far_corner = [](const torch::Tensor& y) {
    return y.index({0, torch::indexing::Slice(), 7, 7});
  };
  EXPECT_TRUE(torch::equal(far_corner(plain->forward(x)), far_corner(plain->forward(poked))));
  EXPECT_FALSE(torch::equal(far_corner(pooled->forward(x)), far_corner(pooled->forward(poked))));
}

TEST(NetworkBlocks, GradientsReachThePoolingLayer) {
  const std::vector<std::string> fens = random_fens(10, 4);
  const torch::Tensor x = planes_of(fens, kMaxInputPlanes);
  Network network = make_network(net("2x16-gp1-feat"), 6);
  network->train();
  const NetworkOutput out = network->forward(x);
  (out.policy.square().mean() + out.wdl.square().mean()).backward();
  int pooling_layers = 0;
  for (const auto& p : network->named_parameters(true)) {
    if (p.key().find("gpool_fc") == std::string::npos) continue;
    ++pooling_layers;
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    EXPECT_GT(p.value().grad().abs().sum().item<float>(), 0.0f) << p.key();
  }
  EXPECT_EQ(pooling_layers, 4) << "weight and bias of two blocks";
}

}  // namespace
}  // namespace chessrl::nn

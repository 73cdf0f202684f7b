#include "chessrl/nn/torch_backend.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "chessrl/nn/batch_evaluator.h"
#include "chessrl/nn/torch_network.h"
#include "nn_test_util.h"

namespace chessrl::nn {
namespace {

struct Outputs {
  std::vector<float> logits;
  std::vector<Wdl> wdl;
};

Outputs run(InferenceBackend& backend, const std::vector<InputPlanes>& inputs) {
  Outputs out{std::vector<float>(inputs.size() * kPolicySize), std::vector<Wdl>(inputs.size())};
  backend.forward(inputs, out.logits, out.wdl);
  return out;
}

float max_difference(const Outputs& a, const Outputs& b) {
  float d = 0;
  for (size_t i = 0; i < a.logits.size(); ++i) d = std::max(d, std::abs(a.logits[i] - b.logits[i]));
  for (size_t i = 0; i < a.wdl.size(); ++i)
    d = std::max({d, std::abs(a.wdl[i].win - b.wdl[i].win), std::abs(a.wdl[i].draw - b.wdl[i].draw),
                  std::abs(a.wdl[i].loss - b.wdl[i].loss)});
  return d;
}

class TorchBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    positions_ = testing::random_positions(31, 24);
    for (auto& p : positions_) inputs_.push_back(encode(p));
    Network net = make_network({2, 16, 4}, 17);
    // Batch-norm statistics away from 0/1, so folding them is exercised.
    torch::Tensor x = torch::empty({std::int64_t(inputs_.size()), kInputPlanes, 8, 8});
    for (size_t i = 0; i < inputs_.size(); ++i)
      expand(inputs_[i], x.data_ptr<float>() + i * kInputPlanes * 64);
    net->train();
    {
      torch::NoGradGuard no_grad;
      net->forward(x);
    }
    net->eval();
    checkpoint_ = to_checkpoint(net, {});
    torch::NoGradGuard no_grad;
    NetworkOutput out = net->forward(x);
    torch::Tensor probs = torch::softmax(out.wdl, 1);
    expected_.logits.assign(out.policy.data_ptr<float>(),
                            out.policy.data_ptr<float>() + out.policy.numel());
    for (std::int64_t i = 0; i < probs.size(0); ++i)
      expected_.wdl.push_back(
          {probs[i][0].item<float>(), probs[i][1].item<float>(), probs[i][2].item<float>()});
  }
  std::vector<chess::Position> positions_;
  std::vector<InputPlanes> inputs_;
  Checkpoint checkpoint_;
  Outputs expected_;
};

// Every combination of the CPU options computes what the network computes.
TEST_F(TorchBackendTest, MatchesTheNetworkForEveryOption) {
  for (bool channels_last : {false, true})
    for (bool fold : {false, true}) {
      auto backend =
          make_torch_backend(checkpoint_, {.channels_last = channels_last, .fold_batchnorm = fold});
      ASSERT_TRUE(backend.ok()) << backend.error();
      EXPECT_LT(max_difference(run(**backend, inputs_), expected_), 1e-4f)
          << (*backend)->describe();
    }
}

TEST_F(TorchBackendTest, BatchedEqualsOneAtATime) {
  auto backend = make_torch_backend(checkpoint_, {}).value_or_throw();
  const Outputs batched = run(*backend, inputs_);
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const Outputs single = run(*backend, {inputs_[i]});
    Outputs slice{std::vector<float>(batched.logits.begin() + i * kPolicySize,
                                     batched.logits.begin() + (i + 1) * kPolicySize),
                  {batched.wdl[i]}};
    EXPECT_LT(max_difference(single, slice), 1e-4f) << i;
  }
}

TEST_F(TorchBackendTest, ConcurrentCallsAreSafe) {
  auto backend = make_torch_backend(checkpoint_, {}).value_or_throw();
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int rep = 0; rep < 5; ++rep)
        bad += max_difference(run(*backend, inputs_), expected_) > 1e-4f;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST_F(TorchBackendTest, ThroughTheBatchEvaluator) {
  std::shared_ptr<InferenceBackend> backend = make_torch_backend(checkpoint_, {}).value_or_throw();
  BatchEvaluator evaluator(backend,
                           {.max_batch = 8, .batch_timeout = std::chrono::microseconds(300)});
  std::vector<EvalRequest> requests(positions_.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < positions_.size(); ++i) {
    const chess::MoveList moves = chess::legal_moves(positions_[i]);
    prepare(requests[i], positions_[i], std::span<const chess::Move>(moves.begin(), moves.end()));
  }
  for (size_t i = 0; i < requests.size(); ++i)
    threads.emplace_back([&, i] { evaluator.evaluate(requests[i]); });
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < requests.size(); ++i) {
    const EvalRequest& r = requests[i];
    const float* l = expected_.logits.data() + i * kPolicySize;
    float max_logit = -INFINITY, sum = 0;
    for (int k = 0; k < r.num_moves; ++k) max_logit = std::max(max_logit, l[r.policy_index[k]]);
    for (int k = 0; k < r.num_moves; ++k) sum += std::exp(l[r.policy_index[k]] - max_logit);
    for (int k = 0; k < r.num_moves; ++k)
      EXPECT_NEAR(r.priors[k], std::exp(l[r.policy_index[k]] - max_logit) / sum, 1e-5f)
          << i << " " << k;
    EXPECT_NEAR(r.wdl.win, expected_.wdl[i].win, 1e-5f);
  }
}

TEST_F(TorchBackendTest, BadOptionsAreNamed) {
  auto expect_error = [&](TorchBackendOptions o, const std::string& words) {
    auto r = make_torch_backend(checkpoint_, o);
    ASSERT_FALSE(r.ok()) << o.device;
    EXPECT_NE(r.error().find(words), std::string::npos) << r.error();
  };
  expect_error({.device = "tpu"}, "device 'tpu' is not cpu, cuda or cuda:N");
  expect_error({.device = "cuda:x"}, "is not cpu, cuda or cuda:N");
  expect_error({.precision = Precision::kFloat16}, "fp16 needs a CUDA device");
  if (!torch_info().cuda_build) expect_error({.device = "cuda"}, "built without CUDA");
  Checkpoint broken = checkpoint_;
  broken.tensors.pop_back();
  auto r = make_torch_backend(broken, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("checkpoint lacks tensor"), std::string::npos) << r.error();
  EXPECT_EQ(parse_precision("fp8").error(), "precision 'fp8' is not one of fp32, fp16, bf16");
  EXPECT_EQ(parse_precision("bf16").value(), Precision::kBFloat16);
}

TEST_F(TorchBackendTest, PrefersAStreamPerCoreGroup) {
  const CpuSplit split = default_cpu_split();
  EXPECT_EQ(make_torch_backend(checkpoint_, {})->get()->preferred_streams(), split.workers);
  EXPECT_EQ(make_torch_backend(checkpoint_, {.threads = split.workers * split.threads})
                ->get()
                ->preferred_streams(),
            1);
  EXPECT_EQ(default_cpu_split(2).workers, 2);
  EXPECT_EQ(default_cpu_split(2).threads, 1);
  EXPECT_EQ(default_cpu_split(16).workers, 4);
  EXPECT_EQ(default_cpu_split(16).threads, 4);
  EXPECT_EQ(default_cpu_split(1).workers, 1);
}

TEST(TorchInfo, DescribesThisLibTorch) {
  const TorchInfo info = torch_info();
  EXPECT_FALSE(info.version.empty());
  EXPECT_GE(info.cpu_threads, 1);
  if (!info.cuda_build) {
    EXPECT_EQ(info.cuda_devices, 0);
  }
}

}  // namespace
}  // namespace chessrl::nn

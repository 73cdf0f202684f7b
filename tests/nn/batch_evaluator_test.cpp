#include "chessrl/nn/batch_evaluator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <thread>

#include "chessrl/core/error.h"
#include "nn_test_util.h"

namespace chessrl::nn {
namespace {

using chess::Position;

// What the evaluator must return for one request: the backend's output for
// that input alone, softmaxed over the legal moves.
void reference(InferenceBackend& backend, const EvalRequest& r, std::vector<float>& priors,
               Wdl& wdl) {
  std::vector<float> logits(kPolicySize);
  backend.forward(std::span<const InputPlanes>(&r.input, 1), logits, std::span<Wdl>(&wdl, 1));
  priors.resize(size_t(r.num_moves));
  float max_logit = -INFINITY, sum = 0;
  for (int k = 0; k < r.num_moves; ++k) max_logit = std::max(max_logit, logits[r.policy_index[k]]);
  for (int k = 0; k < r.num_moves; ++k)
    sum += priors[k] = std::exp(logits[r.policy_index[k]] - max_logit);
  for (auto& p : priors) p /= sum;
}

std::vector<EvalRequest> requests_for(std::vector<Position>& positions) {
  std::vector<EvalRequest> out(positions.size());
  for (size_t i = 0; i < positions.size(); ++i) {
    const chess::MoveList moves = chess::legal_moves(positions[i]);
    prepare(out[i], positions[i], std::span<const chess::Move>(moves.begin(), moves.end()));
  }
  return out;
}

// Many threads, each with its own positions, some submitting one at a time and
// some several at once: each gets exactly its own results.
TEST(BatchEvaluator, EachCallerGetsItsOwnResult) {
  auto backend = std::make_shared<FakeBackend>(FakeBackend::Mode::kRandom, 42);
  BatchEvaluator evaluator(
      backend, {.max_batch = 16, .batch_timeout = std::chrono::microseconds(500), .workers = 2});
  constexpr int kThreads = 12;
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0}, checked{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto positions = testing::random_positions(std::uint32_t(100 + t), 60);
      auto requests = requests_for(positions);
      const size_t group = t % 3 == 0 ? 1 : size_t(t % 3 + 2);  // 1, 3 or 4 at a time
      for (size_t i = 0; i < requests.size(); i += group) {
        const size_t n = std::min(group, requests.size() - i);
        evaluator.evaluate(std::span<EvalRequest>(requests.data() + i, n));
      }
      FakeBackend direct(FakeBackend::Mode::kRandom, 42);
      std::vector<float> priors;
      Wdl wdl;
      for (const EvalRequest& r : requests) {
        reference(direct, r, priors, wdl);
        bool same = r.wdl.win == wdl.win && r.wdl.draw == wdl.draw && r.wdl.loss == wdl.loss;
        for (int k = 0; k < r.num_moves; ++k)
          same = same && std::abs(r.priors[k] - priors[k]) < 1e-6f;
        mismatches += !same;
        ++checked;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(checked.load(), kThreads * 60);
  const EvaluatorStats s = evaluator.stats();
  EXPECT_EQ(s.requests, std::uint64_t(kThreads * 60));
  EXPECT_EQ(s.evaluated, s.requests) << "no cache";
  EXPECT_LE(s.mean_batch(), 16.0);
  EXPECT_GT(s.latency_quantile(0.5), 0.0);
}

// on_batch sees every forward pass: its sizes add up to the positions
// evaluated, and none exceeds max_batch.
TEST(BatchEvaluator, OnBatchSeesEveryForwardPass) {
  std::atomic<std::uint64_t> positions{0}, passes{0};
  std::atomic<int> largest{0};
  BatchEvaluatorOptions options{.max_batch = 8, .batch_timeout = std::chrono::microseconds(200)};
  options.on_batch = [&](int batch, double seconds) {
    positions += std::uint64_t(batch);
    ++passes;
    int seen = largest.load();
    while (batch > seen && !largest.compare_exchange_weak(seen, batch)) {
    }
    EXPECT_GE(seconds, 0.0);
  };
  {
    BatchEvaluator evaluator(std::make_shared<FakeBackend>(), options);
    auto positions_in = testing::random_positions(7, 50);
    auto requests = requests_for(positions_in);
    evaluator.evaluate(std::span<EvalRequest>(requests));
    const EvaluatorStats s = evaluator.stats();
    EXPECT_EQ(positions.load(), s.evaluated);
    EXPECT_EQ(passes.load(), s.batches);
  }
  EXPECT_EQ(positions.load(), 50u);
  EXPECT_LE(largest.load(), 8);
}

TEST(BatchEvaluator, PriorsAreADistributionOverTheLegalMoves) {
  auto positions = testing::random_positions(8, 50);
  auto requests = requests_for(positions);
  BatchEvaluator evaluator(std::make_shared<FakeBackend>(FakeBackend::Mode::kRandom, 1),
                           {.max_batch = 64});
  evaluator.evaluate(requests);
  for (const EvalRequest& r : requests) {
    float sum = 0;
    for (int k = 0; k < r.num_moves; ++k) {
      EXPECT_GT(r.priors[k], 0.0f);
      sum += r.priors[k];
    }
    EXPECT_NEAR(sum, 1.0f, 1e-5f);
    EXPECT_NEAR(r.wdl.win + r.wdl.draw + r.wdl.loss, 1.0f, 1e-5f);
  }
  BatchEvaluator uniform(std::make_shared<FakeBackend>(), {.max_batch = 8});
  uniform.evaluate(requests.front());
  for (int k = 0; k < requests.front().num_moves; ++k)
    EXPECT_FLOAT_EQ(requests.front().priors[k], 1.0f / float(requests.front().num_moves));
  EXPECT_FLOAT_EQ(requests.front().wdl.value(), 0.0f);
}

TEST(BatchEvaluator, CacheAnswersRepeatedPositions) {
  auto positions = testing::random_positions(21, 40);
  auto first = requests_for(positions);
  auto again = requests_for(positions);
  std::vector<std::pair<std::size_t, std::size_t>> lookups;  // (requests, hits) per call
  BatchEvaluator evaluator(
      std::make_shared<FakeBackend>(FakeBackend::Mode::kRandom, 3),
      {.max_batch = 32,
       .cache_size = 1000,
       .on_lookup = [&](std::size_t n, std::size_t hits) { lookups.emplace_back(n, hits); }});
  evaluator.evaluate(first);
  for (const EvalRequest& r : first) EXPECT_FALSE(r.from_cache);
  evaluator.evaluate(again);
  for (size_t i = 0; i < again.size(); ++i) {
    EXPECT_TRUE(again[i].from_cache);
    EXPECT_EQ(again[i].wdl.win, first[i].wdl.win);
    for (int k = 0; k < again[i].num_moves; ++k) EXPECT_EQ(again[i].priors[k], first[i].priors[k]);
  }
  const EvaluatorStats s = evaluator.stats();
  EXPECT_EQ(s.requests, 80u);
  EXPECT_EQ(s.cache_hits, 40u);
  EXPECT_EQ(s.evaluated, 40u);
  using Lookup = std::pair<std::size_t, std::size_t>;
  EXPECT_EQ(lookups, (std::vector<Lookup>{{40, 0}, {40, 40}}));
}

TEST(BatchEvaluator, CacheStaysWithinItsSize) {
  auto positions = testing::random_positions(4, 600);
  auto requests = requests_for(positions);
  BatchEvaluator evaluator(std::make_shared<FakeBackend>(FakeBackend::Mode::kRandom, 3),
                           {.max_batch = 64, .cache_size = 128});
  evaluator.evaluate(requests);
  auto again = requests_for(positions);
  evaluator.evaluate(again);
  const EvaluatorStats s = evaluator.stats();
  EXPECT_GT(s.cache_hits, 0u);
  EXPECT_LE(s.cache_hits, 130u) << "at most the cache's capacity (rounded up per shard) is kept";
}

// A backend that takes a while, as a network does: callers pile up meanwhile,
// so batches fill.
class SlowBackend : public InferenceBackend {
 public:
  void forward(std::span<const InputPlanes> inputs, std::span<float> logits,
               std::span<Wdl> wdl) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    inner_.forward(inputs, logits, wdl);
  }
  std::string describe() const override { return "slow"; }

 private:
  FakeBackend inner_;
};

TEST(BatchEvaluator, BatchesFillWhileTheBackendIsBusy) {
  BatchEvaluator evaluator(std::make_shared<SlowBackend>(),
                           {.max_batch = 16, .batch_timeout = std::chrono::milliseconds(50)});
  std::vector<std::thread> threads;
  for (int t = 0; t < 32; ++t)
    threads.emplace_back([&, t] {
      auto positions = testing::random_positions(std::uint32_t(t), 10);
      auto requests = requests_for(positions);
      for (EvalRequest& r : requests) evaluator.evaluate(r);
    });
  for (auto& t : threads) t.join();
  const EvaluatorStats s = evaluator.stats();
  EXPECT_EQ(s.evaluated, 320u);
  EXPECT_GE(s.mean_batch(), 8.0)
      << "32 callers and a max batch of 16: batches should be mostly full";
}

TEST(BatchEvaluator, ALoneCallerIsAnsweredAfterTheTimeout) {
  BatchEvaluator evaluator(std::make_shared<FakeBackend>(),
                           {.max_batch = 256, .batch_timeout = std::chrono::milliseconds(5)});
  auto positions = testing::random_positions(1, 1);
  auto requests = requests_for(positions);
  evaluator.evaluate(requests.front());
  EXPECT_EQ(evaluator.stats().batches, 1u);
  EXPECT_EQ(evaluator.stats().mean_batch(), 1.0);
}

class FailingBackend : public InferenceBackend {
 public:
  void forward(std::span<const InputPlanes> inputs, std::span<float> logits,
               std::span<Wdl> wdl) override {
    if (fail_next.exchange(false)) throw Error("device lost");
    FakeBackend().forward(inputs, logits, wdl);
  }
  std::string describe() const override { return "failing"; }
  std::atomic<bool> fail_next{true};
};

TEST(BatchEvaluator, BackendErrorsReachTheCallerAndTheEvaluatorGoesOn) {
  auto backend = std::make_shared<FailingBackend>();
  BatchEvaluator evaluator(backend,
                           {.max_batch = 4, .batch_timeout = std::chrono::microseconds(100)});
  auto positions = testing::random_positions(2, 3);
  auto requests = requests_for(positions);
  try {
    evaluator.evaluate(requests);
    FAIL() << "expected the backend's error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "device lost");
  }
  EXPECT_NO_THROW(evaluator.evaluate(requests));
  EXPECT_NEAR(requests[0].wdl.draw, 1.0f / 3, 1e-6f);
}

class ThreeStreamBackend : public FakeBackend {
 public:
  int preferred_streams() const override { return 3; }
};

TEST(BatchEvaluator, WorkersDefaultToTheBackendsPreference) {
  BatchEvaluator by_backend(std::make_shared<ThreeStreamBackend>(), {});
  EXPECT_EQ(by_backend.options().workers, 3);
  BatchEvaluator explicit_count(std::make_shared<ThreeStreamBackend>(), {.workers = 1});
  EXPECT_EQ(explicit_count.options().workers, 1);
  BatchEvaluator fake(std::make_shared<FakeBackend>(), {});
  EXPECT_EQ(fake.options().workers, 1);
}

TEST(EvaluatorStats, QuantilesAndDifferences) {
  EvaluatorStats a;
  a.latency_histogram[40] = 6;  // [1024, 1218) us
  a.latency_histogram[60] = 4;  // [32768, 38968) us
  a.evaluated = 10;
  a.batches = 2;
  EXPECT_NEAR(a.latency_quantile(0.5), std::exp2(41.0 / 4) * 1e-6, 1e-9);
  EXPECT_NEAR(a.latency_quantile(0.9), std::exp2(61.0 / 4) * 1e-6, 1e-9);
  EXPECT_EQ(a.mean_batch(), 5.0);
  EvaluatorStats b = a;
  b.latency_histogram[60] += 10;
  b.evaluated += 10;
  b.batches += 1;
  const EvaluatorStats d = b - a;
  EXPECT_EQ(d.evaluated, 10u);
  EXPECT_EQ(d.mean_batch(), 10.0);
  EXPECT_NEAR(d.latency_quantile(0.5), std::exp2(61.0 / 4) * 1e-6, 1e-9);
  EXPECT_EQ(EvaluatorStats{}.latency_quantile(0.5), 0.0);
}

TEST(BatchEvaluator, PrepareSetsThePolicyIndicesOfTheMoves) {
  Position pos;
  const chess::MoveList moves = chess::legal_moves(pos);
  EvalRequest r;
  prepare(r, pos, std::span<const chess::Move>(moves.begin(), moves.end()));
  ASSERT_EQ(r.num_moves, 20);
  for (int k = 0; k < r.num_moves; ++k)
    EXPECT_EQ(r.policy_index[k], policy_index(moves[k], chess::kWhite));
  std::uint64_t key;
  EXPECT_EQ(r.input, encode(pos, &key));
  EXPECT_EQ(r.key, key);
}

}  // namespace
}  // namespace chessrl::nn

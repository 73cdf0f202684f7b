// ReplaySource with several Sample calls in flight (--sample-inflight): over a
// counting fake of the Sample call, every position a call returns reaches the
// batches exactly once, a reply's positions stay together and in order, no
// more than k calls are out or waiting, failures and undecodable replies are
// the fetch's error without losing a position, and cancel() ends a fetch that
// waits; then over a real replay server on loopback.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "chessrl/chess/notation.h"
#include "chessrl/chess/position.h"
#include "chessrl/metrics/registry.h"
#include "chessrl/record/move_codec.h"
#include "chessrl/replay/memory_store.h"
#include "chessrl/replay_service/replay_server.h"
#include "chessrl/rpc/clients.h"
#include "replay_source.h"
#include "service_test_util.h"

namespace chessrl::trainer_service {
namespace {

// The root value carries a position's number exactly (n / 2^20, n < 2^20):
// the Example says which sampled position it came from.
constexpr double kIdScale = 1 << 20;

v1::TrainingPosition numbered_position(std::uint64_t id) {
  v1::TrainingPosition p;
  p.set_fen(std::string(chess::kStartFen));
  p.set_game_id("numbered-" + std::to_string(id));
  p.set_ply(1);
  auto pos = chess::Position::from_fen(chess::kStartFen).value_or_throw();
  const chess::Move e4 = chess::parse_uci(pos, "e2e4").value_or_throw();
  p.add_history_moves(record::encode_move(e4));
  pos.make_move(e4);
  for (const char* uci : {"e7e5", "c7c5"})
    p.add_policy_moves(record::encode_move(chess::parse_uci(pos, uci).value_or_throw()));
  p.add_policy_probs(0.5f);
  p.add_policy_probs(0.5f);
  p.set_result(0);
  p.set_root_value(static_cast<float>(double(id) / kIdScale));
  return p;
}

std::uint64_t id_of(const train::Example& e) {
  return static_cast<std::uint64_t>(double(e.root_value) * kIdScale + 0.5);
}

// A Sample call that numbers the positions it returns (0, 1, 2, ... across
// calls, in the order calls reach it), sleeps up to `max_delay_ms` at random
// so that replies come back out of order, and counts the calls in flight.
// fail_call(n) makes the n-th call (0-based) fail UNAVAILABLE; corrupt_call(n)
// makes it return an undecodable position. After cancel(), calls fail CANCELLED.
class FakeSampler {
 public:
  explicit FakeSampler(int max_delay_ms = 3) : max_delay_ms_(max_delay_ms) {}

  rpc::RpcResult<v1::SampleReply> sample(std::uint32_t count) {
    const int now = ++in_flight_;
    int seen = max_in_flight_.load();
    while (now > seen && !max_in_flight_.compare_exchange_weak(seen, now)) {
    }
    std::uint64_t call = 0, first = 0;
    int delay = 0;
    {
      std::lock_guard lock(mu_);
      call = calls_++;
      first = next_id_;
      next_id_ += count;
      delay = max_delay_ms_ > 0 ? std::uniform_int_distribution<int>(0, max_delay_ms_)(rng_) : 0;
    }
    {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(delay) + hold_, [&] { return cancelled_; });
    }
    --in_flight_;
    std::lock_guard lock(mu_);
    if (cancelled_) return rpc::RpcFailure{"Sample: CANCELLED: cancelled", grpc::CANCELLED};
    if (call == fail_call_)
      return rpc::RpcFailure{"Sample: UNAVAILABLE: replay is restarting", grpc::UNAVAILABLE};
    v1::SampleReply reply;
    for (std::uint32_t i = 0; i < count; ++i) *reply.add_positions() = numbered_position(first + i);
    if (call == corrupt_call_) reply.mutable_positions(0)->set_fen("not a fen");
    reply.set_window_positions(1000);
    // Positions a caller may see: every successful, decodable call's.
    if (call != corrupt_call_)
      for (std::uint32_t i = 0; i < count; ++i) returned_.insert(first + i);
    return reply;
  }
  void cancel() {
    std::lock_guard lock(mu_);
    cancelled_ = true;
    cv_.notify_all();
  }
  ReplaySource source(std::uint32_t max_sample, int inflight) {
    return ReplaySource([this](std::uint32_t n) { return sample(n); }, [this] { cancel(); },
                        max_sample, inflight);
  }

  std::uint64_t calls() {
    std::lock_guard lock(mu_);
    return calls_;
  }
  std::set<std::uint64_t> returned() {
    std::lock_guard lock(mu_);
    return returned_;
  }
  int max_in_flight() const { return max_in_flight_.load(); }
  std::uint64_t fail_call_ = ~std::uint64_t{0};
  std::uint64_t corrupt_call_ = ~std::uint64_t{0};
  std::chrono::milliseconds hold_{0};  // every call lasts at least this

 private:
  int max_delay_ms_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool cancelled_ = false;
  std::uint64_t calls_ = 0, next_id_ = 0;
  std::set<std::uint64_t> returned_;
  std::mt19937 rng_{7};
  std::atomic<int> in_flight_{0}, max_in_flight_{0};
};

// Appends a fetch's ids; the fetch must have succeeded with `count` examples.
void take(ReplaySource& source, int count, std::vector<std::uint64_t>& ids) {
  auto batch = source.fetch(0, 0, 1, count);
  ASSERT_TRUE(batch.ok()) << batch.error();
  ASSERT_EQ(batch->size(), std::size_t(count));
  for (const auto& e : *batch) ids.push_back(id_of(e));
}

// No id twice, every one a position some call returned, and at most `pending`
// returned positions not (yet) delivered.
void expect_exactly_once(const std::vector<std::uint64_t>& ids,
                         const std::set<std::uint64_t>& returned, std::size_t pending) {
  const std::set<std::uint64_t> unique(ids.begin(), ids.end());
  EXPECT_EQ(unique.size(), ids.size()) << "a position was delivered twice";
  for (std::uint64_t id : unique)
    ASSERT_TRUE(returned.count(id)) << "position " << id << " was never sampled";
  EXPECT_LE(returned.size() - unique.size(), pending) << "positions sampled but lost";
}

TEST(ReplaySourcePipeline, EveryPositionReachesTheBatchesExactlyOnceAndRepliesStayTogether) {
  for (int inflight : {2, 4, 8}) {
    SCOPED_TRACE("inflight " + std::to_string(inflight));
    FakeSampler fake;
    // Calls of 7 positions for batches of 10: batches straddle replies, and a
    // reply's rest begins the next batch.
    constexpr std::uint32_t kChunk = 7;
    constexpr int kBatch = 10, kBatches = 60;
    std::vector<std::uint64_t> ids;
    {
      ReplaySource source = fake.source(kChunk, inflight);
      EXPECT_EQ(source.inflight(), inflight);
      for (int b = 0; b < kBatches; ++b) take(source, kBatch, ids);
      source.cancel();
    }
    ASSERT_EQ(ids.size(), std::size_t(kBatch * kBatches));
    // Undelivered: what the last fetch left over, plus at most k calls ahead.
    expect_exactly_once(ids, fake.returned(), kChunk * std::size_t(inflight + 1));
    // A reply's positions arrive together, in its order: the stream is runs
    // of 7 consecutive ids, each starting at a multiple of 7.
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (i % kChunk == 0) {
        EXPECT_EQ(ids[i] % kChunk, 0u) << "at " << i;
      } else {
        EXPECT_EQ(ids[i], ids[i - 1] + 1) << "at " << i;
      }
    }
    EXPECT_GT(fake.max_in_flight(), 1);
    EXPECT_LE(fake.max_in_flight(), inflight);
  }
}

TEST(ReplaySourcePipeline, KeepsKCallsInFlightAndNoMoreThanKAhead) {
  FakeSampler fake(0);
  fake.hold_ = std::chrono::milliseconds(30);
  constexpr int kInflight = 4;
  ReplaySource source = fake.source(16, kInflight);
  // No call before the first fetch: the source does not know the size.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(fake.calls(), 0u);
  std::vector<std::uint64_t> ids;
  take(source, 16, ids);
  // The consumer stops: the workers fill k calls' worth and stop there (a
  // busy machine may take a while to get there, never past it).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (fake.calls() < 1u + kInflight && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const std::uint64_t ahead = fake.calls();
  EXPECT_EQ(ahead, 1u + kInflight) << "one call taken, k more ahead";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(fake.calls(), ahead) << "no call while k calls' worth wait";
  EXPECT_GE(fake.max_in_flight(), 2);
  EXPECT_LE(fake.max_in_flight(), kInflight);
  source.cancel();
}

TEST(ReplaySourcePipeline, AFailedCallIsTheFetchsErrorAndPausesCallsUntilTheNextFetch) {
  FakeSampler fake;
  fake.fail_call_ = 3;
  ReplaySource source = fake.source(8, 4);
  std::vector<std::uint64_t> ids;
  std::string error;
  for (int b = 0; b < 10 && error.empty(); ++b) {
    auto batch = source.fetch(0, 0, 1, 8);
    if (!batch.ok()) {
      error = batch.error();
      break;
    }
    for (const auto& e : *batch) ids.push_back(id_of(e));
  }
  ASSERT_FALSE(error.empty()) << "the failed call never reached a fetch";
  EXPECT_NE(error.find("replay source: Sample: UNAVAILABLE: replay is restarting"),
            std::string::npos)
      << error;
  // Paused: the caller's backoff paces the retry.
  const std::uint64_t calls = fake.calls();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(fake.calls(), calls) << "calls went on after a failure nobody retried";
  for (int b = 0; b < 10; ++b) take(source, 8, ids);
  EXPECT_GT(fake.calls(), calls);
  source.cancel();
  expect_exactly_once(ids, fake.returned(), 8 * 5);
}

TEST(ReplaySourcePipeline, AnUndecodableReplyIsAnErrorNamingTheGameAndLosesNoGoodPosition) {
  FakeSampler fake;
  fake.corrupt_call_ = 2;
  ReplaySource source = fake.source(5, 2);
  std::vector<std::uint64_t> ids;
  std::string error;
  // Batches of 3 from replies of 5: the failing fetch has taken positions.
  for (int b = 0; b < 10 && error.empty(); ++b) {
    auto batch = source.fetch(0, 0, 1, 3);
    if (!batch.ok()) {
      error = batch.error();
      break;
    }
    for (const auto& e : *batch) ids.push_back(id_of(e));
  }
  ASSERT_FALSE(error.empty());
  EXPECT_NE(error.find("'numbered-"), std::string::npos) << error;
  EXPECT_NE(error.find("FEN"), std::string::npos) << error;
  for (int b = 0; b < 10; ++b) take(source, 3, ids);
  source.cancel();
  expect_exactly_once(ids, fake.returned(), 5 * 3);
  // The positions of the good replies before the bad one all arrived.
  const std::set<std::uint64_t> delivered(ids.begin(), ids.end());
  for (std::uint64_t id : fake.returned()) {
    if (id >= 10) continue;
    EXPECT_TRUE(delivered.count(id)) << "position " << id << " was lost";
  }
}

TEST(ReplaySourcePipeline, CancelEndsAWaitingFetchAtOnceAndEveryLaterOne) {
  FakeSampler fake(0);
  fake.hold_ = std::chrono::seconds(60);  // the replay service does not answer
  auto source = std::make_unique<ReplaySource>([&](std::uint32_t n) { return fake.sample(n); },
                                               [&] { fake.cancel(); }, 4, 4);
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    source->cancel();
  });
  const auto start = std::chrono::steady_clock::now();
  auto batch = source->fetch(0, 0, 1, 4);
  canceller.join();
  ASSERT_FALSE(batch.ok());
  EXPECT_NE(batch.error().find("cancelled"), std::string::npos) << batch.error();
  auto again = source->fetch(0, 0, 1, 4);
  ASSERT_FALSE(again.ok());
  source.reset();  // joins the workers: their calls ended with the cancel
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(ReplaySourcePipeline, ServesBatchesFromARealReplayServer) {
  replay::MemoryReplayStore games(100000);
  replay::MemoryModelStore models;
  metrics::Registry registry;
  replay_service::ReplayServer server(games, models, registry, testing::fast_server_options());
  auto client = std::make_shared<rpc::ReplayClient>(testing::single_try_client(server.port()));
  ASSERT_TRUE(client->push_games(testing::batch(1, 8, 30)).ok());
  ReplaySource source(client, /*max_sample=*/32, /*inflight=*/4);
  for (int b = 0; b < 20; ++b) {
    auto batch = source.fetch(b, 0, 1, 48);
    ASSERT_TRUE(batch.ok()) << batch.error();
    ASSERT_EQ(batch->size(), 48u);
    for (const auto& e : *batch) {
      double sum = 0;
      for (const auto& [index, prob] : e.policy) sum += prob;
      EXPECT_NEAR(sum, 1.0, 1e-3);
      EXPECT_FALSE(e.legal.empty());
    }
  }
  auto status = source.status();
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_GT(status->window_positions, 0u);
  source.cancel();
}

}  // namespace
}  // namespace chessrl::trainer_service

// Admission control of PushGames (--max-push-calls, --max-push-bytes): the
// real ReplayServiceImpl over a store whose push() waits until the test lets
// it go, so that calls are held inside the handler while others arrive. No
// gRPC server: the handler is called from plain threads.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "chessrl/core/error.h"
#include "chessrl/harness/synthetic_game.h"
#include "chessrl/metrics/registry.h"
#include "chessrl/replay/memory_store.h"
#include "chessrl/replay_service/replay_server.h"
#include "chessrl/replay_service/replay_service.h"
#include "game_pusher.h"
#include "pusher_test_options.h"
#include "selfplay_service.h"
#include "service_test_util.h"

namespace chessrl::replay_service {
namespace {

using namespace std::chrono_literals;

// A MemoryReplayStore whose push() blocks until release(): the calls in it
// stay in the service's handler.
class HeldStore final : public replay::ReplayStore {
 public:
  HeldStore() : inner_(1'000'000) {}
  Result<std::vector<replay::PushResult>> push(std::span<const record::StoredGame> games) override {
    std::unique_lock lock(mutex_);
    ++inside_;
    changed_.notify_all();
    changed_.wait(lock, [&] { return released_; });
    --inside_;
    lock.unlock();
    return inner_.push(games);
  }
  replay::StoreResult<replay::SampledPositions> sample(std::size_t count,
                                                       std::uint64_t seed) override {
    return inner_.sample(count, seed);
  }
  Result<replay::WindowStats> stats() override { return inner_.stats(); }

  // Waits until `n` pushes are inside push(); false after 10 s.
  bool wait_inside(int n) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, 10s, [&] { return inside_ == n; });
  }
  void release() {
    std::lock_guard lock(mutex_);
    released_ = true;
    changed_.notify_all();
  }

 private:
  replay::MemoryReplayStore inner_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int inside_ = 0;
  bool released_ = false;
};

v1::PushGamesRequest request_of(std::uint64_t seed, int games) {
  v1::PushGamesRequest request;
  for (int i = 0; i < games; ++i) {
    harness::SyntheticGameOptions options;
    options.max_plies = 30;
    *request.add_games() = harness::make_synthetic_game(seed * 100 + std::uint64_t(i) + 1, options,
                                                        "adm-" + std::to_string(seed) + "-");
  }
  return request;
}

bool has(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

class ReplayAdmissionTest : public ::testing::Test {
 protected:
  ReplayAdmissionTest() : metrics_(registry_) {}

  grpc::Status push(ReplayServiceImpl& service, const v1::PushGamesRequest& request) {
    grpc::ServerContext context;
    v1::PushGamesReply reply;
    return service.PushGames(&context, &request, &reply);
  }
  // Pushes each request on a thread of its own (they block in the store).
  void push_held(ReplayServiceImpl& service, const std::vector<v1::PushGamesRequest>& requests) {
    for (const auto& r : requests) {
      const v1::PushGamesRequest& request = requests_.emplace_back(r);  // stays put (a list)
      held_.emplace_back([this, &service, &request] {
        const grpc::Status status = push(service, request);
        EXPECT_TRUE(status.ok()) << status.error_message();
      });
    }
  }
  void join_held() {
    for (auto& t : held_) t.join();
    held_.clear();
  }

  HeldStore store_;
  metrics::Registry registry_;
  ReplayMetrics metrics_;
  const rpc::ServerAuth auth_;
  std::list<v1::PushGamesRequest> requests_;
  std::vector<std::thread> held_;
};

TEST_F(ReplayAdmissionTest, TheCallBeyondMaxPushCallsIsRefusedAtOnceAndCounted) {
  ReplayServiceOptions options;
  options.max_push_calls = 3;
  options.max_push_bytes = 0;  // no byte cap here
  ReplayServiceImpl service(store_, metrics_, options, auth_);
  std::vector<v1::PushGamesRequest> requests = {request_of(1, 2), request_of(2, 2),
                                                request_of(3, 2)};
  push_held(service, requests);
  ASSERT_TRUE(store_.wait_inside(3));
  EXPECT_TRUE(has(registry_.serialize(), "chessrl_replay_pushes_in_flight 3"));

  // The fourth is answered while the three are held: UNAVAILABLE, naming the flag.
  const grpc::Status busy = push(service, request_of(4, 2));
  EXPECT_EQ(busy.error_code(), grpc::StatusCode::UNAVAILABLE) << busy.error_message();
  EXPECT_TRUE(has(busy.error_message(), "3 pushes in progress, at most 3 (--max-push-calls)"))
      << busy.error_message();
  EXPECT_TRUE(has(busy.error_message(), "nothing was stored")) << busy.error_message();
  std::string text = registry_.serialize();
  EXPECT_TRUE(has(text, "chessrl_replay_pushes_refused_total{reason=\"busy_calls\"} 1")) << text;
  EXPECT_TRUE(has(text, "chessrl_replay_pushes_refused_total{reason=\"busy_bytes\"} 0")) << text;
  EXPECT_TRUE(
      has(text, "chessrl_replay_rpc_requests_total{code=\"UNAVAILABLE\",method=\"PushGames\"} 1"))
      << text;

  store_.release();
  join_held();
  EXPECT_EQ(store_.stats()->games, 6u);  // the refused call stored nothing
  // Room again: the same call is taken.
  EXPECT_TRUE(push(service, request_of(4, 2)).ok());
  EXPECT_EQ(store_.stats()->games, 8u);
  text = registry_.serialize();
  EXPECT_TRUE(has(text, "chessrl_replay_pushes_in_flight 0")) << text;
  EXPECT_TRUE(has(text, "chessrl_replay_push_bytes_in_flight 0")) << text;
}

TEST_F(ReplayAdmissionTest, ACallThatDoesNotFitBesideThoseInProgressIsRefusedByBytes) {
  const v1::PushGamesRequest first = request_of(1, 3);
  const v1::PushGamesRequest second = request_of(2, 3);
  const v1::PushGamesRequest third = request_of(3, 3);
  const std::uint64_t two = first.ByteSizeLong() + second.ByteSizeLong();
  ReplayServiceOptions options;
  options.max_push_calls = 0;                               // no call cap here
  options.max_push_bytes = two + third.ByteSizeLong() - 1;  // the third does not fit beside them
  ReplayServiceImpl service(store_, metrics_, options, auth_);
  push_held(service, {first, second});
  ASSERT_TRUE(store_.wait_inside(2));
  EXPECT_TRUE(
      has(registry_.serialize(), "chessrl_replay_push_bytes_in_flight " + std::to_string(two)));

  const grpc::Status busy = push(service, third);
  EXPECT_EQ(busy.error_code(), grpc::StatusCode::UNAVAILABLE) << busy.error_message();
  EXPECT_TRUE(has(busy.error_message(), "(--max-push-bytes)")) << busy.error_message();
  EXPECT_TRUE(
      has(registry_.serialize(), "chessrl_replay_pushes_refused_total{reason=\"busy_bytes\"} 1"));
  // One small enough to fit beside them is taken (it waits in the store too).
  v1::PushGamesRequest small = request_of(5, 1);
  ASSERT_LE(two + small.ByteSizeLong(), options.max_push_bytes);
  push_held(service, {small});
  ASSERT_TRUE(store_.wait_inside(3));

  // A call larger than the whole budget could never fit: RESOURCE_EXHAUSTED
  // (the pusher sends it in halves), not UNAVAILABLE (retried as it is).
  v1::PushGamesRequest huge = request_of(6, 12);
  ASSERT_GT(huge.ByteSizeLong(), options.max_push_bytes);
  const grpc::Status too_large = push(service, huge);
  EXPECT_EQ(too_large.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << too_large.error_message();
  EXPECT_TRUE(has(too_large.error_message(), "--max-push-bytes")) << too_large.error_message();
  EXPECT_TRUE(
      has(registry_.serialize(), "chessrl_replay_pushes_refused_total{reason=\"too_large\"} 1"));

  store_.release();
  join_held();
  EXPECT_TRUE(push(service, third).ok());
  EXPECT_EQ(store_.stats()->games, 10u);  // 3 + 3 + 1 + 3
  EXPECT_TRUE(has(registry_.serialize(), "chessrl_replay_push_bytes_in_flight 0"));
}

TEST_F(ReplayAdmissionTest, ABudgetBelowTheLargestMessageIsRefusedAtStartNamingBothFlags) {
  replay::MemoryModelStore models;
  ReplayServerOptions options;
  options.listen = "127.0.0.1:0";
  options.max_message_bytes = 8 << 20;
  options.replay.max_push_bytes = 4 << 20;
  try {
    ReplayServer server(store_, models, registry_, options);
    FAIL() << "a push budget below --max-message-bytes was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "--max-push-bytes 4194304 is below --max-message-bytes 8388608"))
        << e.what();
  }
}

// A MemoryReplayStore that takes 20 ms a push: a Redis slower than its producers.
class SlowStore final : public replay::ReplayStore {
 public:
  SlowStore() : inner_(1'000'000) {}
  Result<std::vector<replay::PushResult>> push(std::span<const record::StoredGame> games) override {
    std::this_thread::sleep_for(20ms);
    return inner_.push(games);
  }
  replay::StoreResult<replay::SampledPositions> sample(std::size_t count,
                                                       std::uint64_t seed) override {
    return inner_.sample(count, seed);
  }
  Result<replay::WindowStats> stats() override { return inner_.stats(); }

 private:
  replay::MemoryReplayStore inner_;
};

// Over real gRPC: six self-play pushers (their own push function and backoff)
// against a replay that serves one push at a time. The others are refused
// busy, keep their games and come back later: every game is stored once,
// none shed, none dropped.
TEST(ReplayAdmissionRpcTest, PushersRefusedBusyKeepTheirGamesAndAllAreStoredOnce) {
  SlowStore store;
  replay::MemoryModelStore models;
  metrics::Registry registry;
  ReplayServerOptions options = testing::fast_server_options();
  options.replay.max_push_calls = 1;
  ReplayServer server(store, models, registry, options);

  selfplay_service::Settings settings;
  settings.replay = "127.0.0.1:" + std::to_string(server.port());
  settings.rpc_deadline_s = 10;
  constexpr int kPushers = 6, kGames = 12;
  std::vector<std::unique_ptr<metrics::Registry>> registries;
  std::vector<std::unique_ptr<selfplay_service::GamePusher>> pushers;
  std::atomic<int> busy_lines{0};
  for (int p = 0; p < kPushers; ++p) {
    registries.push_back(std::make_unique<metrics::Registry>());
    pushers.push_back(std::make_unique<selfplay_service::GamePusher>(
        selfplay_service::replay_push(settings), selfplay_service::fast_pusher_options(),
        *registries.back(), [&](const std::string& line) {
          if (has(line, "--max-push-calls")) ++busy_lines;
        }));
  }
  for (int g = 0; g < kGames; ++g) {
    for (int p = 0; p < kPushers; ++p) {
      harness::SyntheticGameOptions game_options;
      game_options.max_plies = 20;
      pushers[std::size_t(p)]->add(harness::make_synthetic_game(
          std::uint64_t(1000 * p + g + 1), game_options, "rpc-p" + std::to_string(p) + "-"));
    }
  }
  for (auto& pusher : pushers) EXPECT_EQ(pusher->flush(60s), 0u);
  std::uint64_t failures = 0;
  for (auto& pusher : pushers) {
    const auto stats = pusher->stats();
    EXPECT_EQ(stats.stored, std::uint64_t(kGames));
    EXPECT_EQ(stats.shed + stats.dropped + stats.rejected + stats.lost, 0u);
    failures += stats.failures;
  }
  EXPECT_EQ(store.stats()->games, std::uint64_t(kPushers * kGames));
  const double refused =
      registry.counter("chessrl_replay_pushes_refused_total", "x", {{"reason", "busy_calls"}})
          .value();
  EXPECT_GT(refused, 0) << "no push was refused: the test did not overload the door";
  EXPECT_EQ(double(failures), refused);  // each refusal a failed push the pusher retried
  EXPECT_GT(busy_lines.load(), 0);       // and its log says why
}

}  // namespace
}  // namespace chessrl::replay_service

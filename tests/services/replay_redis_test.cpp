// The replay service over a real redis-server (password set) on a free
// loopback port, in-process: the protocol, metrics, eviction, sampling,
// models, a Redis restart, replicas. The chessrl-replay binary's own tests
// (configuration, health, SIGTERM, refusals) are in replay_cli_test.cpp.
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "chessrl/metrics/registry.h"
#include "chessrl/harness/redis_server.h"
#include "chessrl/replay/redis_store.h"
#include "chessrl/rpc/clients.h"
#include "chessrl/replay_service/replay_server.h"
#include "service_test_util.h"

namespace chessrl::replay_service {
namespace {

using harness::RedisServer;
using testing::batch;

class ReplayRedisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    redis_ = harness::RedisServer::start();
    start_service(2000);
  }

  void start_service(std::uint64_t window) {
    server_.reset();
    replay::RedisOptions options;
    options.port = redis_->port();
    options.password = redis_->password();
    options.window_positions = window;
    options.backoff_max = std::chrono::milliseconds(200);
    options.command_timeout = std::chrono::milliseconds(2000);
    store_ = std::make_unique<replay::RedisReplayStore>(options);
    server_ = std::make_unique<ReplayServer>(*store_, *store_, registry_,
                                             testing::fast_server_options());
    const auto client = testing::single_try_client(server_->port());
    replay_ = std::make_unique<rpc::ReplayClient>(client);
    models_ = std::make_unique<rpc::ModelRegistryClient>(client);
  }

  long long dbsize() const { return std::atoll(redis_->cli({"DBSIZE"}).c_str()); }

  std::unique_ptr<harness::RedisServer> redis_;
  std::unique_ptr<replay::RedisReplayStore> store_;
  metrics::Registry registry_;
  std::unique_ptr<ReplayServer> server_;
  std::unique_ptr<rpc::ReplayClient> replay_;
  std::unique_ptr<rpc::ModelRegistryClient> models_;
};

TEST_F(ReplayRedisTest, StoresAValidBatchInRedis) {
  auto request = batch(1, 8);
  std::uint64_t positions = 0;
  for (const auto& g : request.games()) positions += static_cast<std::uint64_t>(g.targets_size());
  auto reply = replay_->push_games(request);
  ASSERT_TRUE(reply.ok()) << reply.error();
  for (const auto& r : reply->results()) EXPECT_EQ(r.status(), v1::STORED) << r.detail();
  auto stats = replay_->stats();
  ASSERT_TRUE(stats.ok()) << stats.error();
  EXPECT_EQ(stats->window_games(), 8u);
  EXPECT_EQ(stats->window_positions(), positions);
  EXPECT_EQ(stats->games_stored_total(), 8u);
  EXPECT_EQ(redis_->cli({"EXISTS", "chessrl:game:" + request.games(3).id()}), "1");
}

TEST_F(ReplayRedisTest, BadGamesAreRejectedAndAbsentFromRedis) {
  ASSERT_TRUE(replay_->push_games(batch(1, 2)).ok());
  const long long keys_before = dbsize();
  v1::PushGamesRequest request;
  for (const auto& b : testing::bad_games()) *request.add_games() = b.game;
  auto reply = replay_->push_games(request);
  ASSERT_TRUE(reply.ok()) << reply.error();
  for (const auto& r : reply->results()) {
    EXPECT_EQ(r.status(), v1::REJECTED) << r.id();
    EXPECT_EQ(redis_->cli({"EXISTS", "chessrl:game:" + r.id()}), "0") << r.id();
  }
  EXPECT_EQ(dbsize(), keys_before);
  EXPECT_EQ(replay_->stats()->window_games(), 2u);
}

TEST_F(ReplayRedisTest, CallsAreCountedByMethodAndCodeAndRedisInfoIsExported) {
  ASSERT_TRUE(replay_->push_games(batch(1, 3)).ok());
  EXPECT_FALSE(replay_->sample(0).ok());  // INVALID_ARGUMENT
  auto none = models_->latest();          // NOT_FOUND, which the client reads as "none yet"
  ASSERT_TRUE(none.ok()) << none.error();
  EXPECT_FALSE(none->has_value());
  const auto calls = [&](const char* method, const char* code) {
    return registry_.counter("chessrl_replay_rpc_requests_total", "x",
                             {{"method", method}, {"code", code}})
        .value();
  };
  EXPECT_EQ(calls("PushGames", "OK"), 1.0);
  EXPECT_EQ(calls("Sample", "INVALID_ARGUMENT"), 1.0);
  EXPECT_EQ(calls("Sample", "OK"), 0.0);
  EXPECT_EQ(calls("LatestModel", "NOT_FOUND"), 1.0);
  const std::string text = registry_.serialize();
  EXPECT_NE(text.find("chessrl_replay_rpc_duration_seconds_count{method=\"PushGames\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("chessrl_replay_rpc_duration_seconds_count{method=\"WatchModels\"} 0\n"),
            std::string::npos)
      << text;

  // The monitor (every 50 ms here) reads INFO memory and persistence; wait for
  // a reading taken after the push.
  const auto gauge = [&](const char* name, const metrics::Labels& labels = {}) {
    return registry_.gauge(name, "x", labels).value();
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (gauge("chessrl_replay_store_changes_since_save") == 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_GT(gauge("chessrl_replay_store_memory_used_bytes"), 100'000.0);
  EXPECT_EQ(gauge("chessrl_replay_store_aof_enabled"), 1.0);
  EXPECT_EQ(gauge("chessrl_replay_store_persistence_ok", {{"kind", "aof"}}), 1.0);
  EXPECT_EQ(gauge("chessrl_replay_store_persistence_ok", {{"kind", "rdb"}}), 1.0);
  EXPECT_GT(gauge("chessrl_replay_store_changes_since_save"), 0.0);
}

TEST_F(ReplayRedisTest, TheSameGamePushedTwiceIsStoredOnce) {
  auto request = batch(50, 4);
  ASSERT_TRUE(replay_->push_games(request).ok());
  const long long keys = dbsize();
  auto again = replay_->push_games(request);
  ASSERT_TRUE(again.ok());
  for (const auto& r : again->results()) EXPECT_EQ(r.status(), v1::DUPLICATE);
  EXPECT_EQ(dbsize(), keys);
  EXPECT_EQ(replay_->stats()->games_stored_total(), 4u);
}

TEST_F(ReplayRedisTest, EvictionKeepsTheWindow) {
  start_service(200);
  std::vector<std::string> ids;
  for (int round = 0; round < 10; ++round) {
    auto request = batch(100 + static_cast<std::uint64_t>(round) * 3, 3);
    for (const auto& g : request.games()) ids.push_back(g.id());
    ASSERT_TRUE(replay_->push_games(request).ok());
    auto stats = replay_->stats();
    ASSERT_TRUE(stats.ok());
    EXPECT_LE(stats->window_positions(), 200u);
  }
  auto stats = replay_->stats();
  EXPECT_GT(stats->window_positions(), 200u - 41u);  // at most one game short of full
  EXPECT_EQ(stats->games_stored_total(), 30u);
  // The newest games are sampled; the oldest are gone.
  auto sample = replay_->sample(2000);
  ASSERT_TRUE(sample.ok());
  std::set<std::string> sampled;
  for (const auto& p : sample->positions()) sampled.insert(p.game_id());
  EXPECT_TRUE(sampled.count(ids.back()));
  EXPECT_FALSE(sampled.count(ids.front()));
  EXPECT_EQ(sampled.size(), stats->window_games());
}

TEST_F(ReplayRedisTest, SamplingIsUniformOverPositions) {
  // A known window: 5 games, 60 positions in all; 60,000 draws through gRPC.
  auto request = batch(7, 5, 24);
  ASSERT_TRUE(replay_->push_games(request).ok());
  const auto window = replay_->stats()->window_positions();
  std::map<std::pair<std::string, std::uint32_t>, int> counts;
  int draws = 0;
  for (int call = 0; call < 12; ++call) {
    auto reply = replay_->sample(5000);
    ASSERT_TRUE(reply.ok()) << reply.error();
    for (const auto& p : reply->positions()) ++counts[{p.game_id(), p.ply()}];
    draws += reply->positions_size();
  }
  ASSERT_EQ(counts.size(), window);  // every position drawn at least once
  const double expected = static_cast<double>(draws) / static_cast<double>(window);
  double chi2 = 0;
  for (const auto& [key, n] : counts) chi2 += (n - expected) * (n - expected) / expected;
  // The service seeds each Sample call from std::random_device, so the draws
  // differ run to run: the bound is a false-positive rate, one run in a
  // billion. It is chi-square's 1 - 1e-9 quantile for k = window - 1 degrees
  // of freedom by Wilson and Hilferty's approximation (z = 5.998, the normal's
  // 1e-9 upper quantile): for k = 59, 149.8, where the exact tail is 7.6e-10.
  // A biased sampler still lands far above it: one position drawn twice as
  // often adds about draws / window = 1,000.
  const double k = static_cast<double>(window - 1);
  const double z = 5.998, h = 2.0 / (9.0 * k);
  const double bound = k * std::pow(1.0 - h + z * std::sqrt(h), 3);
  EXPECT_LT(chi2, bound) << "window " << window;
}

TEST_F(ReplayRedisTest, AModelPublishedInChunksReadsBackIdentical) {
  std::string blob(3'300'000, '\0');
  for (std::size_t i = 0; i < blob.size(); ++i) blob[i] = static_cast<char>((i * 7919) >> 3);
  v1::ModelInfo info;
  info.set_version(5);
  info.set_step(500);
  (*info.mutable_metadata())["net"] = "10x128";
  auto published = models_->publish(info, blob, 256 * 1024);
  ASSERT_TRUE(published.ok()) << published.error();
  auto got = models_->get(5);
  ASSERT_TRUE(got.ok()) << got.error();
  EXPECT_TRUE(got->second == blob);
  EXPECT_EQ(got->first.metadata().at("net"), "10x128");
  EXPECT_EQ(got->first.step(), 500u);
}

TEST_F(ReplayRedisTest, WatchModelsSeesANewVersion) {
  std::atomic<std::uint64_t> seen{0};
  std::atomic<bool> stop{false};
  std::thread watcher([&] {
    models_->watch(0, [&](const v1::ModelInfo& m) {
      seen = m.version();
      return m.version() < 2;
    }, stop);
  });
  v1::ModelInfo info;
  info.set_version(1);
  ASSERT_TRUE(models_->publish(info, "first").ok());
  for (int i = 0; i < 300 && seen != 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(seen.load(), 1u);
  info.set_version(2);
  ASSERT_TRUE(models_->publish(info, "second").ok());
  watcher.join();
  EXPECT_EQ(seen.load(), 2u);
}

TEST_F(ReplayRedisTest, ARedisRestartLosesNoAcknowledgedGame) {
  std::set<std::string> acknowledged;
  std::uint64_t seed = 1000;
  auto push_some = [&](int n) {
    auto request = batch(seed, n, 20);
    seed += static_cast<std::uint64_t>(n);
    auto reply = replay_->push_games(request);
    if (!reply.ok()) {
      EXPECT_NE(reply.error().find("UNAVAILABLE"), std::string::npos) << reply.error();
      return false;
    }
    for (const auto& r : reply->results()) {
      if (r.status() == v1::STORED) acknowledged.insert(r.id());
    }
    return true;
  };
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(push_some(4));
  redis_->kill();
  int failed = 0;
  for (int i = 0; i < 5; ++i) failed += push_some(4) ? 0 : 1;
  EXPECT_EQ(failed, 5);  // nothing is acknowledged while Redis is down
  EXPECT_FALSE(replay_->sample(10).ok());
  redis_->restart();
  bool back = false;  // the store reconnects by itself, after its backoff
  for (int i = 0; i < 100 && !back; ++i) {
    back = push_some(2);
    if (!back) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(back);
  // Every acknowledged game is still there: pushing it again is a duplicate.
  v1::PushGamesRequest all;
  for (std::uint64_t s = 1000; s < seed; ++s) *all.add_games() = testing::game(s, 20);
  auto reply = replay_->push_games(all);
  ASSERT_TRUE(reply.ok()) << reply.error();
  int duplicates = 0;
  for (const auto& r : reply->results()) {
    if (acknowledged.count(r.id())) {
      EXPECT_EQ(r.status(), v1::DUPLICATE) << r.id() << " was acknowledged, then lost";
      ++duplicates;
    }
  }
  EXPECT_EQ(duplicates, static_cast<int>(acknowledged.size()));
  EXPECT_GE(acknowledged.size(), 22u);
}

// --ack-replicas 1 with no replica: the push is written but not acknowledged,
// and the call says so with UNAVAILABLE (a client retries it), naming how
// many replicas confirmed.
TEST_F(ReplayRedisTest, APushNoReplicaConfirmedIsUnavailable) {
  replay::RedisOptions options;
  options.port = redis_->port();
  options.password = redis_->password();
  options.ack_replicas = 1;
  options.ack_timeout = std::chrono::milliseconds(200);
  replay::RedisReplayStore store(options);
  metrics::Registry registry;
  ReplayServer server(store, store, registry, testing::fast_server_options());
  rpc::ReplayClient client(testing::single_try_client(server.port()));
  auto reply = client.push_games(batch(700, 3, 10));
  ASSERT_FALSE(reply.ok()) << "acknowledged without a replica";
  EXPECT_EQ(reply.code(), grpc::StatusCode::UNAVAILABLE) << reply.error();
  EXPECT_NE(reply.error().find("only 0 of 1 replicas confirmed it within 200 ms"),
            std::string::npos)
      << reply.error();
}

}  // namespace
}  // namespace chessrl::replay_service

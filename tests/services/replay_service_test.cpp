// The replay service over the in-memory stores, through real gRPC clients on
// a loopback port: validation, idempotence, sampling, store failures, the
// model registry and the health service.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "chessrl/metrics/registry.h"
#include "chessrl/replay/memory_store.h"
#include "chessrl/replay_service/replay_server.h"
#include "chessrl/rpc/clients.h"
#include "service_test_util.h"

namespace chessrl::replay_service {
namespace {

using testing::bad_games;
using testing::batch;

class ReplayServiceTest : public ::testing::Test {
 protected:
  ReplayServiceTest() : games_(1000) {
    server_ =
        std::make_unique<ReplayServer>(games_, models_, registry_, testing::fast_server_options());
    const auto client = testing::single_try_client(server_->port());
    replay_ = std::make_unique<rpc::ReplayClient>(client);
    registry_client_ = std::make_unique<rpc::ModelRegistryClient>(client);
  }

  replay::MemoryReplayStore games_;
  replay::MemoryModelStore models_;
  metrics::Registry registry_;
  std::unique_ptr<ReplayServer> server_;
  std::unique_ptr<rpc::ReplayClient> replay_;
  std::unique_ptr<rpc::ModelRegistryClient> registry_client_;
};

TEST_F(ReplayServiceTest, StoresAValidBatchAndCountsIt) {
  auto request = batch(1, 5);
  int positions = 0;
  for (const auto& g : request.games()) positions += g.targets_size();
  auto reply = replay_->push_games(request);
  ASSERT_TRUE(reply.ok()) << reply.error();
  ASSERT_EQ(reply->results_size(), 5);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(reply->results(i).id(), request.games(i).id());
    EXPECT_EQ(reply->results(i).status(), v1::STORED) << reply->results(i).detail();
  }
  auto stats = replay_->stats();
  ASSERT_TRUE(stats.ok()) << stats.error();
  EXPECT_EQ(stats->window_games(), 5u);
  EXPECT_EQ(stats->window_positions(), static_cast<std::uint64_t>(positions));
  EXPECT_EQ(stats->window_capacity(), 1000u);
  EXPECT_NE(registry_.serialize().find("chessrl_replay_games_stored_total 5"), std::string::npos);
}

TEST_F(ReplayServiceTest, RejectsEachKindOfBadGameAndStoresNothingOfIt) {
  auto good = batch(10, 1);
  v1::PushGamesRequest request;
  const auto bad = bad_games();
  for (const auto& b : bad) *request.add_games() = b.game;
  *request.add_games() = good.games(0);  // a good game beside them is still stored
  auto reply = replay_->push_games(request);
  ASSERT_TRUE(reply.ok()) << reply.error();
  std::map<std::string, int> expected;
  for (std::size_t i = 0; i < bad.size(); ++i) {
    const auto& result = reply->results(static_cast<int>(i));
    EXPECT_EQ(result.status(), v1::REJECTED) << bad[i].game.id();
    EXPECT_EQ(result.reason(), bad[i].reason) << bad[i].game.id() << ": " << result.detail();
    EXPECT_FALSE(result.detail().empty());
    ++expected[bad[i].reason];
  }
  EXPECT_EQ(reply->results(static_cast<int>(bad.size())).status(), v1::STORED);
  auto stats = replay_->stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->window_games(), 1u);
  EXPECT_EQ(stats->window_positions(), static_cast<std::uint64_t>(good.games(0).targets_size()));
  const std::string text = registry_.serialize();
  for (const auto& [reason, n] : expected) {
    EXPECT_EQ(stats->rejected_total().at(reason), static_cast<std::uint64_t>(n)) << reason;
    EXPECT_NE(text.find("chessrl_replay_games_rejected_total{reason=\"" + reason + "\"} " +
                        std::to_string(n)),
              std::string::npos)
        << reason << "\n"
        << text;
  }
}

TEST_F(ReplayServiceTest, TheSameGameTwiceIsStoredOnce) {
  auto request = batch(20, 3);
  *request.add_games() = request.games(1);  // also twice within one batch
  auto first = replay_->push_games(request);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->results(1).status(), v1::STORED);
  EXPECT_EQ(first->results(3).status(), v1::DUPLICATE);
  auto again = replay_->push_games(request);
  ASSERT_TRUE(again.ok());
  for (const auto& r : again->results()) EXPECT_EQ(r.status(), v1::DUPLICATE);
  auto stats = replay_->stats();
  EXPECT_EQ(stats->window_games(), 3u);
  EXPECT_EQ(stats->duplicates_total(), 5u);
}

TEST_F(ReplayServiceTest, SampleServesWholeTrainingPositions) {
  ASSERT_TRUE(replay_->push_games(batch(30, 4)).ok());
  auto reply = replay_->sample(500);
  ASSERT_TRUE(reply.ok()) << reply.error();
  ASSERT_EQ(reply->positions_size(), 500);
  std::set<std::string> games;
  for (const auto& p : reply->positions()) {
    EXPECT_FALSE(p.fen().empty());
    EXPECT_EQ(p.policy_moves_size(), p.policy_probs_size());
    EXPECT_GE(p.result(), -1);
    EXPECT_LE(p.result(), 1);
    games.insert(p.game_id());
  }
  EXPECT_EQ(games.size(), 4u);  // 500 draws from 4 games reach every game
  EXPECT_EQ(reply->window_positions(), replay_->stats()->window_positions());
}

TEST_F(ReplayServiceTest, SampleRefusesBadCountsAndAnswersAnEmptyWindowWithNothing) {
  auto none = replay_->sample(10);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->positions_size(), 0);
  auto zero = replay_->sample(0);
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().find("INVALID_ARGUMENT"), std::string::npos) << zero.error();
  auto huge = replay_->sample(1 << 20);
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.error().find("count must be"), std::string::npos) << huge.error();
}

TEST_F(ReplayServiceTest, AStoreFailureIsUnavailableAndNothingIsAcknowledged) {
  games_.set_failure("redis 127.0.0.1:6379: connection refused");
  auto push = replay_->push_games(batch(40, 2));
  ASSERT_FALSE(push.ok());
  EXPECT_NE(push.error().find("UNAVAILABLE"), std::string::npos) << push.error();
  EXPECT_NE(push.error().find("connection refused"), std::string::npos);
  EXPECT_FALSE(replay_->sample(10).ok());
  EXPECT_FALSE(replay_->stats().ok());
  // The health service follows the store.
  for (int i = 0; i < 100 && server_->serving(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(testing::health(server_->port()), grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  games_.set_failure("");
  auto retry = replay_->push_games(batch(40, 2));
  ASSERT_TRUE(retry.ok()) << retry.error();
  EXPECT_EQ(retry->results(0).status(), v1::STORED);
  for (int i = 0; i < 100 && !server_->serving(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(testing::health(server_->port()), grpc::health::v1::HealthCheckResponse::SERVING);
}

std::string random_blob(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string blob(n, '\0');
  for (auto& c : blob) c = static_cast<char>(rng());
  return blob;
}

TEST_F(ReplayServiceTest, AModelPublishedInChunksReadsBackIdentical) {
  EXPECT_FALSE(registry_client_->latest()->has_value());
  EXPECT_FALSE(registry_client_->get(0).ok());
  const std::string blob = random_blob(2'500'000, 1);
  v1::ModelInfo info;
  info.set_version(1);
  info.set_step(100);
  (*info.mutable_metadata())["arch"] = "6x64";
  auto published = registry_client_->publish(info, blob, 300'000);  // 9 chunks
  ASSERT_TRUE(published.ok()) << published.error();
  EXPECT_EQ(published->size_bytes(), blob.size());
  EXPECT_GT(published->created_unix_ms(), 0);
  auto got = registry_client_->get(1);
  ASSERT_TRUE(got.ok()) << got.error();
  EXPECT_EQ(got->second, blob);
  EXPECT_EQ(got->first.step(), 100u);
  EXPECT_EQ(got->first.metadata().at("arch"), "6x64");
  EXPECT_EQ((*registry_client_->latest())->version(), 1u);
  // A retry of the same publish is fine; other bytes under the same version are not.
  EXPECT_TRUE(registry_client_->publish(info, blob).ok());
  auto conflict = registry_client_->publish(info, random_blob(1000, 2));
  ASSERT_FALSE(conflict.ok());
  EXPECT_NE(conflict.error().find("ALREADY_EXISTS"), std::string::npos) << conflict.error();
  v1::ModelInfo zero;
  EXPECT_NE(registry_client_->publish(zero, blob).error().find("version > 0"), std::string::npos);
}

TEST_F(ReplayServiceTest, BestIsASeparatePointer) {
  EXPECT_FALSE(registry_client_->best()->has_value());
  v1::ModelInfo info;
  for (std::uint64_t v = 1; v <= 2; ++v) {
    info.set_version(v);
    ASSERT_TRUE(registry_client_->publish(info, random_blob(100, static_cast<unsigned>(v))).ok());
  }
  EXPECT_NE(registry_client_->set_best(7).error().find("NOT_FOUND"), std::string::npos);
  ASSERT_TRUE(registry_client_->set_best(1).ok());
  EXPECT_EQ((*registry_client_->best())->version(), 1u);
  EXPECT_EQ((*registry_client_->latest())->version(), 2u);
  auto best = registry_client_->get(0, true);
  ASSERT_TRUE(best.ok());
  EXPECT_EQ(best->second, random_blob(100, 1));
}

TEST_F(ReplayServiceTest, WatchModelsSeesEachNewVersion) {
  v1::ModelInfo info;
  info.set_version(1);
  ASSERT_TRUE(registry_client_->publish(info, "one").ok());
  std::vector<std::uint64_t> seen;
  std::mutex mutex;
  std::atomic<bool> stop{false};
  std::thread watcher([&] {
    registry_client_->watch(
        0,
        [&](const v1::ModelInfo& m) {
          std::lock_guard lock(mutex);
          seen.push_back(m.version());
          return m.version() < 3;
        },
        stop);
  });
  auto wait_for = [&](std::size_t n) {
    for (int i = 0; i < 500; ++i) {
      {
        std::lock_guard lock(mutex);
        if (seen.size() >= n) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  };
  ASSERT_TRUE(wait_for(1));
  info.set_version(2);
  ASSERT_TRUE(registry_client_->publish(info, "two").ok());
  ASSERT_TRUE(wait_for(2));
  info.set_version(3);
  ASSERT_TRUE(registry_client_->publish(info, "three").ok());
  watcher.join();  // returns once on_model said stop after version 3
  EXPECT_EQ(seen, (std::vector<std::uint64_t>{1, 2, 3}));
}

TEST_F(ReplayServiceTest, ShutdownEndsWatchersAndRefusesNewCalls) {
  v1::ModelInfo info;
  info.set_version(1);
  ASSERT_TRUE(registry_client_->publish(info, "one").ok());
  std::atomic<bool> stop{false};
  std::atomic<int> calls{0};
  std::thread watcher([&] {
    registry_client_->watch(
        0, [&](const v1::ModelInfo&) { return ++calls > 0; }, stop);
  });
  for (int i = 0; i < 1000 && calls.load() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(calls.load(), 1);  // the stream is open: it delivered version 1
  // The open stream must not hold shutdown for its grace: the server ends it
  // at once (UNAVAILABLE, "stopping") rather than cancelling it at the end.
  const auto grace = std::chrono::seconds(5);
  const auto start = std::chrono::steady_clock::now();
  server_->shutdown(grace);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, std::chrono::seconds(2))
      << std::chrono::duration<double>(took).count() << " s: the watcher held shutdown";
  const auto ended_as_stopping = registry_
                                     .counter("chessrl_replay_rpc_requests_total", "x",
                                              {{"method", "WatchModels"}, {"code", "UNAVAILABLE"}})
                                     .value();
  EXPECT_GE(ended_as_stopping, 1.0);
  EXPECT_FALSE(replay_->stats().ok());
  stop = true;
  watcher.join();  // the client's stop flag ends its reconnect loop
  EXPECT_EQ(calls.load(), 1);
}

}  // namespace
}  // namespace chessrl::replay_service

namespace chessrl::replay_service {
namespace {

// Limits: each refused with the limit named, nothing stored.
class ReplayLimitsTest : public ::testing::Test {
 protected:
  ReplayLimitsTest() : games_(100000) {
    auto options = testing::fast_server_options();
    options.replay.max_push_games = 8;
    options.models.max_model_bytes = 1 << 20;
    options.models.max_chunk_bytes = 64 << 10;
    server_ = std::make_unique<ReplayServer>(games_, models_, registry_, options);
  }
  rpc::ClientOptions client() const { return testing::single_try_client(server_->port()); }

  replay::MemoryReplayStore games_;
  replay::MemoryModelStore models_;
  metrics::Registry registry_;
  std::unique_ptr<ReplayServer> server_;
};

TEST_F(ReplayLimitsTest, APushOfMoreGamesThanTheLimitIsRefusedWhole) {
  auto refused = rpc::ReplayClient(client()).push_games(batch(1, 9, 6));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("PushGames: RESOURCE_EXHAUSTED: PushGames: 9 games in one call; "
                                 "at most 8 (--max-push-games); nothing was stored"),
            std::string::npos)
      << refused.error();
  EXPECT_EQ(games_.stats()->games, 0u);
  EXPECT_TRUE(rpc::ReplayClient(client()).push_games(batch(1, 8, 6)).ok());
  EXPECT_EQ(games_.stats()->games, 8u);
}

TEST_F(ReplayLimitsTest, AModelNamingAnOversizeInItsFirstChunkIsRefusedBeforeTheRest) {
  auto channel = rpc::make_channel(client());
  auto stub = v1::ModelRegistry::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::ModelInfo reply;
  auto writer = stub->PublishModel(&context, &reply);
  v1::ModelChunk chunk;
  chunk.mutable_info()->set_version(1);
  chunk.mutable_info()->set_size_bytes(std::uint64_t{6} << 30);  // 6 GiB claimed
  chunk.set_data("tiny");
  writer->Write(chunk);
  writer->WritesDone();
  const grpc::Status status = writer->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(status.error_message(),
            "PublishModel: the model is larger than --max-model-bytes (1048576): its info says "
            "6442450944 bytes");
  EXPECT_FALSE(models_.latest()->has_value());
}

TEST_F(ReplayLimitsTest, ModelsOverTheSizeOrChunkLimitAreRefused) {
  rpc::ModelRegistryClient registry(client());
  v1::ModelInfo info;
  info.set_version(1);
  auto big = registry.publish(info, std::string((1 << 20) + 1, 'x'), 32 << 10);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().find("RESOURCE_EXHAUSTED: PublishModel: the model is larger than "
                             "--max-model-bytes (1048576)"),
            std::string::npos)
      << big.error();
  auto chunky = registry.publish(info, std::string(100 << 10, 'x'), 100 << 10);
  ASSERT_FALSE(chunky.ok());
  EXPECT_NE(chunky.error().find("a chunk is larger than 65536 bytes"), std::string::npos)
      << chunky.error();
  EXPECT_FALSE(models_.latest()->has_value());
  auto fits = registry.publish(info, std::string(100 << 10, 'x'), 32 << 10);
  ASSERT_TRUE(fits.ok()) << fits.error();
}

TEST_F(ReplayLimitsTest, AClientRefusesAModelOverItsOwnLimitFromTheFirstChunk) {
  v1::ModelInfo info;
  info.set_version(3);
  ASSERT_TRUE(
      rpc::ModelRegistryClient(client()).publish(info, std::string(200 << 10, 'm'), 32 << 10).ok());
  auto small = client();
  small.max_model_bytes = 100 << 10;
  auto got = rpc::ModelRegistryClient(small).get(3);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.error().find("GetModel: RESOURCE_EXHAUSTED: version 3 is 204800 bytes; this "
                             "client takes at most 102400"),
            std::string::npos)
      << got.error();
  auto whole = rpc::ModelRegistryClient(client()).get(3);
  ASSERT_TRUE(whole.ok()) << whole.error();
  EXPECT_EQ(whole->second.size(), 200u << 10);
}

TEST(BlobCrc32Test, MatchesZlibAndKnownValues) {
  EXPECT_EQ(rpc::blob_crc32(""), 0u);
  EXPECT_EQ(rpc::blob_crc32("123456789"), 0xCBF43926u);  // the CRC-32 check value
}

}  // namespace
}  // namespace chessrl::replay_service

namespace chessrl::replay_service {
namespace {

// A batch whose games all name `producer`.
v1::PushGamesRequest from(const std::string& producer, std::uint64_t seed, int n, int plies = 40) {
  auto request = batch(seed, n, plies, producer + "-");
  for (auto& g : *request.mutable_games()) g.set_producer(producer);
  return request;
}

int positions_of(const v1::PushGamesRequest& request) {
  int n = 0;
  for (const auto& g : request.games()) n += g.targets_size();
  return n;
}

bool has(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

// Per-producer rules over real gRPC: quarantine, positions per call, rate.
class ReplayProducerTest : public ::testing::Test {
 protected:
  ReplayProducerTest() : games_(1000000) {}
  void start(const ReplayServerOptions& options) {
    server_ = std::make_unique<ReplayServer>(games_, models_, registry_, options);
    replay_ = std::make_unique<rpc::ReplayClient>(testing::single_try_client(server_->port()));
  }
  replay::MemoryReplayStore games_;
  replay::MemoryModelStore models_;
  metrics::Registry registry_;
  std::unique_ptr<ReplayServer> server_;
  std::unique_ptr<rpc::ReplayClient> replay_;
};

TEST_F(ReplayProducerTest, AQuarantinedProducersPushesAreRefusedWholeAndCounted) {
  auto options = testing::fast_server_options();
  options.replay.producers.quarantined = {"pod-bad"};
  start(options);
  auto refused = replay_->push_games(from("pod-bad", 1, 3));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_TRUE(has(refused.error(),
                  "producer 'pod-bad' is quarantined (--quarantine): its games "
                  "are refused; nothing was stored"))
      << refused.error();
  // One game of it among others refuses the call: nothing of it is stored.
  auto mixed = from("pod-good", 10, 2);
  *mixed.add_games() = from("pod-bad", 20, 1).games(0);
  EXPECT_EQ(replay_->push_games(mixed).code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(games_.stats()->games, 0u);
  auto good = replay_->push_games(from("pod-good", 30, 2));
  ASSERT_TRUE(good.ok()) << good.error();
  EXPECT_EQ(games_.stats()->games, 2u);
  const std::string text = registry_.serialize();
  EXPECT_TRUE(has(text, "chessrl_replay_games_refused_total{reason=\"quarantined\"} 6")) << text;
  EXPECT_TRUE(
      has(text, "chessrl_replay_producer_games_total{producer=\"pod-bad\",result=\"refused\"} 4"))
      << text;
  EXPECT_TRUE(
      has(text, "chessrl_replay_producer_games_total{producer=\"pod-good\",result=\"stored\"} 2"))
      << text;
}

TEST_F(ReplayProducerTest, ACallOfSeveralGamesOverThePositionCapIsRefusedWhole) {
  auto options = testing::fast_server_options();
  options.replay.max_push_positions = 50;
  start(options);
  const auto two = from("pod-1", 1, 2, 40);  // 40 targets each (synthetic: every ply)
  ASSERT_GT(positions_of(two), 50);
  auto refused = replay_->push_games(two);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(has(refused.error(), std::to_string(positions_of(two)) +
                                       " training positions in one call of several games; at "
                                       "most 50 (--max-push-positions); nothing was stored"))
      << refused.error();
  EXPECT_EQ(games_.stats()->games, 0u);
  // Each alone passes (as self-play's pusher sends them after halving its batch).
  for (const auto& g : two.games()) {
    v1::PushGamesRequest one;
    *one.add_games() = g;
    auto reply = replay_->push_games(one);
    ASSERT_TRUE(reply.ok()) << reply.error();
  }
  EXPECT_EQ(games_.stats()->games, 2u);
  EXPECT_TRUE(has(registry_.serialize(),
                  "chessrl_replay_games_refused_total{reason=\"too_many_positions\"} 2"));
}

TEST_F(ReplayProducerTest, AProducerOverItsRateIsRefusedAndOthersAreNot) {
  auto options = testing::fast_server_options();
  options.replay.producers.rate = 0.001;  // positions a second: no refill within the test
  options.replay.limits.max_plies = 100;  // the bucket holds one game of 100 plies at least
  start(options);
  const auto first = from("pod-1", 1, 2, 40);
  ASSERT_LE(positions_of(first), 100);
  ASSERT_TRUE(replay_->push_games(first).ok());
  auto over = replay_->push_games(from("pod-1", 10, 2, 40));
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(has(over.error(), "producer 'pod-1' is over its rate: the call has " +
                                    std::to_string(positions_of(from("pod-1", 10, 2, 40))) +
                                    " training positions, the producer may push " +
                                    std::to_string(100 - positions_of(first)) + " now"))
      << over.error();
  EXPECT_TRUE(has(over.error(), "--producer-rate")) << over.error();
  // Another producer has a bucket of its own.
  ASSERT_TRUE(replay_->push_games(from("pod-2", 20, 2, 40)).ok());
  EXPECT_EQ(games_.stats()->games, 4u);
  const std::string text = registry_.serialize();
  EXPECT_TRUE(has(text, "chessrl_replay_games_refused_total{reason=\"rate_limited\"} 2")) << text;
  EXPECT_TRUE(has(text, "chessrl_replay_producer_positions_total{producer=\"pod-2\"} " +
                            std::to_string(positions_of(from("pod-2", 20, 2, 40)))))
      << text;
}

// The gate alone, on a clock of the test's own.
class ProducerGateTest : public ::testing::Test {
 protected:
  ProducerGate::Clock::time_point now_{};
  metrics::Registry registry_;
  std::unique_ptr<ProducerGate> gate(ProducerOptions options, std::size_t min_burst = 1) {
    return std::make_unique<ProducerGate>(options, registry_, min_burst, [this] { return now_; });
  }
  static v1::PushGamesRequest positions(const std::string& producer, int n) {
    v1::PushGamesRequest request;
    v1::Game* g = request.add_games();
    g->set_producer(producer);
    for (int i = 0; i < n; ++i) g->add_targets();
    return request;
  }
};

TEST_F(ProducerGateTest, ABucketRefillsAtTheRateUpToItsDepth) {
  ProducerOptions options;
  options.rate = 100;
  options.burst_seconds = 10;  // 1,000 at once
  auto g = gate(options);
  EXPECT_TRUE(g->admit(positions("a", 1000)).ok());
  EXPECT_EQ(g->admit(positions("a", 1)).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  now_ += std::chrono::seconds(2);  // 200 back
  EXPECT_FALSE(g->admit(positions("a", 201)).ok());
  EXPECT_TRUE(g->admit(positions("a", 200)).ok());
  now_ += std::chrono::hours(1);  // never more than the depth
  EXPECT_FALSE(g->admit(positions("a", 1001)).ok());
  EXPECT_TRUE(g->admit(positions("a", 1000)).ok());
  // A game without positions costs one.
  EXPECT_FALSE(g->admit(positions("a", 0)).ok());
  options.rate = 0;  // no limit
  auto open = gate(options);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(open->admit(positions("a", 10000)).ok());
}

TEST_F(ProducerGateTest, LabelsAndBucketsAreBoundedAndTheRestShareOther) {
  ProducerOptions options;
  options.rate = 1;
  options.burst_seconds = 10;
  options.max_tracked = 2;
  auto g = gate(options);
  EXPECT_EQ(g->label("pod-a"), "pod-a");
  EXPECT_EQ(g->label("pod-b"), "pod-b");
  EXPECT_EQ(g->label("pod-c"), "(other)");
  EXPECT_EQ(g->label("pod-a"), "pod-a");
  EXPECT_EQ(g->label("bad name\n"), "(other)");
  EXPECT_EQ(g->label(""), "(other)");
  for (int i = 0; i < 1000; ++i)
    g->count("x" + std::to_string(i), ProducerGate::Result::kStored, 1);
  const std::string text = registry_.serialize();
  std::size_t series = 0;
  for (std::size_t at = 0;
       (at = text.find("chessrl_replay_producer_positions_total{", at)) != std::string::npos; ++at)
    ++series;
  EXPECT_EQ(series, 3u) << text;  // pod-a, pod-b, (other)
  EXPECT_TRUE(has(text, "chessrl_replay_producer_positions_total{producer=\"(other)\"} 1000"));

  // Buckets: two names at once have their own; a third shares (other)'s ...
  EXPECT_TRUE(g->admit(positions("p1", 10)).ok());
  EXPECT_TRUE(g->admit(positions("p2", 10)).ok());
  EXPECT_TRUE(g->admit(positions("p3", 10)).ok());
  const grpc::Status shared = g->admit(positions("p4", 1));  // (other) is empty now
  EXPECT_EQ(shared.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(has(shared.error_message(), "producer (other) (the names beyond --max-producers"))
      << shared.error_message();
  // ... until a bucket has refilled and is forgotten.
  now_ += std::chrono::seconds(10);
  EXPECT_TRUE(g->admit(positions("p4", 10)).ok());
  EXPECT_FALSE(g->admit(positions("p4", 1)).ok());  // its own bucket, now empty
  EXPECT_TRUE(g->admit(positions("p1", 10)).ok());
}

// Per-producer series over `text`: lines of the two per-producer families.
std::size_t producer_series(const std::string& text) {
  std::size_t n = 0;
  for (const char* family :
       {"\nchessrl_replay_producer_games_total{", "\nchessrl_replay_producer_positions_total{"}) {
    for (std::size_t at = 0; (at = text.find(family, at)) != std::string::npos; ++at) ++n;
  }
  return n;
}

// Ten rollouts of 1,000 new pod names each, an expiry of a minute on the
// test's clock: the old names' series go once they are idle, and every new
// name gets series of its own. Without expiry the series would pile up
// (50,000 by the tenth) or, under --max-producers, every new name would be
// "(other)".
TEST_F(ProducerGateTest, IdleSeriesExpireSoThatEachRolloutsNamesGetTheirOwn) {
  ProducerOptions options;
  options.max_tracked = 100000;
  options.idle_expiry_seconds = 60;
  auto g = gate(options);
  constexpr int kRollouts = 10, kNames = 1000;
  for (int r = 0; r < kRollouts; ++r) {
    // The rollout's pods push over 30 s, 100 s after the last one began.
    const auto start = now_;
    for (int i = 0; i < kNames; ++i) {
      now_ = start + std::chrono::milliseconds(30 * i);
      const std::string name = "pod-r" + std::to_string(r) + "-" + std::to_string(i);
      g->count(name, ProducerGate::Result::kStored, 10);
      ASSERT_EQ(g->label(name), name) << "rollout " << r;
    }
    const std::string text = registry_.serialize();
    // Active in the last minute: this rollout's names; 5 series each, and (other)'s.
    EXPECT_LE(producer_series(text), 5u * kNames + 50) << "rollout " << r;
    EXPECT_GE(producer_series(text), 5u * kNames) << "rollout " << r;
    if (r > 0) {
      EXPECT_FALSE(has(text, "producer=\"pod-r" + std::to_string(r - 1) + "-"))
          << "rollout " << r - 1 << "'s series outlived the expiry";
    }
    EXPECT_TRUE(has(text, "chessrl_replay_producer_positions_total{producer=\"pod-r" +
                              std::to_string(r) + "-999\"} 10"));
    now_ = start + std::chrono::seconds(100);
  }
}

TEST_F(ProducerGateTest, BeyondMaxProducersNamesStillShareOtherAndExpiryFreesPlaces) {
  ProducerOptions options;
  options.max_tracked = 1000;
  options.idle_expiry_seconds = 60;
  auto g = gate(options);
  for (int r = 0; r < 3; ++r) {
    const auto start = now_;
    int own = 0;
    for (int i = 0; i < 1200; ++i) {
      now_ = start + std::chrono::milliseconds(20 * i);
      const std::string name = "pod-r" + std::to_string(r) + "-" + std::to_string(i);
      g->count(name, ProducerGate::Result::kStored, 1);
      const std::string label = g->label(name);
      if (label == name) {
        ++own;
      } else {
        EXPECT_EQ(label, "(other)");
      }
    }
    EXPECT_EQ(own, 1000) << "rollout " << r;  // the first 1,000 new names, every rollout
    const std::string text = registry_.serialize();
    EXPECT_LE(producer_series(text), 5u * 1000 + 5);
    EXPECT_TRUE(has(text, "chessrl_replay_producer_positions_total{producer=\"(other)\"} " +
                              std::to_string(200 * (r + 1))))
        << "rollout " << r;
    now_ = start + std::chrono::seconds(200);
  }
}

TEST_F(ProducerGateTest, ANameBackAfterItsExpiryStartsFromZeroAndZeroMeansNever) {
  ProducerOptions options;
  options.idle_expiry_seconds = 60;
  auto g = gate(options);
  g->count("pod-a", ProducerGate::Result::kStored, 7);
  now_ += std::chrono::seconds(59);
  g->count("pod-b", ProducerGate::Result::kStored, 1);
  EXPECT_TRUE(has(registry_.serialize(), "{producer=\"pod-a\"} 7"));  // idle 59 s: kept
  now_ += std::chrono::seconds(2);                                    // pod-a idle 61 s, pod-b 2 s
  g->count("pod-b", ProducerGate::Result::kStored, 1);
  std::string text = registry_.serialize();
  EXPECT_FALSE(has(text, "producer=\"pod-a\"")) << text;
  EXPECT_TRUE(has(text, "chessrl_replay_producer_positions_total{producer=\"pod-b\"} 2")) << text;
  g->count("pod-a", ProducerGate::Result::kStored, 3);
  EXPECT_TRUE(
      has(registry_.serialize(), "chessrl_replay_producer_positions_total{producer=\"pod-a\"} 3"));
  // (other) never expires.
  EXPECT_TRUE(has(registry_.serialize(),
                  "chessrl_replay_producer_positions_total{producer=\"(other)\"} 0"));

  metrics::Registry registry;
  options.idle_expiry_seconds = 0;
  ProducerGate never(options, registry, 1, [this] { return now_; });
  never.count("pod-c", ProducerGate::Result::kStored, 4);
  now_ += std::chrono::hours(24 * 365);
  never.count("pod-d", ProducerGate::Result::kStored, 1);
  EXPECT_TRUE(has(registry.serialize(), "{producer=\"pod-c\"} 4"));
}

}  // namespace
}  // namespace chessrl::replay_service

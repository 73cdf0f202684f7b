// What the replay service passes on from its stores: a game the store failed
// on while others of the batch were stored is FAILED (the rest STORED), and
// the registry keeps the newest --keep-models versions and the best, pruning
// the rest after each publish (GetModel of one is NOT_FOUND, naming it).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chessrl/metrics/registry.h"
#include "chessrl/replay/memory_store.h"
#include "chessrl/rpc/clients.h"
#include "chessrl/replay_service/replay_server.h"
#include "service_test_util.h"

namespace chessrl::replay_service {
namespace {

// The in-memory store, failing each game whose id holds "fail": what Redis
// answers when one script of a MULTI/EXEC fails and the others do not.
class PartlyFailingStore final : public replay::ReplayStore {
 public:
  Result<std::vector<replay::PushResult>> push(std::span<const record::StoredGame> games) override {
    std::vector<record::StoredGame> taken;
    for (const auto& game : games) {
      if (game.id.find("fail") == std::string::npos) taken.push_back(game);
    }
    auto stored = inner_.push(taken);
    if (!stored.ok()) return stored;
    std::vector<replay::PushResult> results;
    std::size_t next = 0;
    for (const auto& game : games) {
      if (game.id.find("fail") == std::string::npos) {
        results.push_back((*stored)[next++]);
      } else {
        results.push_back({replay::PushStatus::kFailed, "push of game '" + game.id + "': ERR oops"});
      }
    }
    return results;
  }
  // The same return type as the in-memory store's sample.
  auto sample(std::size_t count, std::uint64_t seed)
      -> decltype(std::declval<replay::MemoryReplayStore&>().sample(count, seed)) override {
    return inner_.sample(count, seed);
  }
  Result<replay::WindowStats> stats() override { return inner_.stats(); }

 private:
  replay::MemoryReplayStore inner_{100000};
};

class ReplayStoreResultsTest : public ::testing::Test {
 protected:
  void start(std::uint32_t keep_models) {
    auto options = testing::fast_server_options();
    options.models.keep_models = keep_models;
    server_ = std::make_unique<ReplayServer>(games_, models_, registry_, options);
    const auto client = testing::single_try_client(server_->port());
    replay_ = std::make_unique<rpc::ReplayClient>(client);
    registry_client_ = std::make_unique<rpc::ModelRegistryClient>(client);
  }
  void publish(std::uint64_t version) {
    v1::ModelInfo info;
    info.set_version(version);
    auto published = registry_client_->publish(info, "model " + std::to_string(version));
    ASSERT_TRUE(published.ok()) << published.error();
  }
  std::vector<std::uint64_t> kept() {
    std::vector<std::uint64_t> versions;
    for (const auto& meta : models_.versions_after(0, 100).value_or_throw()) {
      versions.push_back(meta.version);
    }
    return versions;
  }

  PartlyFailingStore games_;
  replay::MemoryModelStore models_;
  metrics::Registry registry_;
  std::unique_ptr<ReplayServer> server_;
  std::unique_ptr<rpc::ReplayClient> replay_;
  std::unique_ptr<rpc::ModelRegistryClient> registry_client_;
};

TEST_F(ReplayStoreResultsTest, AGameTheStoreFailedOnIsFailedAndTheOthersStored) {
  start(20);
  v1::PushGamesRequest request;
  *request.add_games() = testing::game(1, 20, "ok-");
  *request.add_games() = testing::game(2, 20, "fail-");
  *request.add_games() = testing::game(3, 20, "ok-");
  auto reply = replay_->push_games(request);
  ASSERT_TRUE(reply.ok()) << reply.error();
  ASSERT_EQ(reply->results_size(), 3);
  EXPECT_EQ(reply->results(0).status(), v1::STORED);
  EXPECT_EQ(reply->results(1).status(), v1::FAILED);
  EXPECT_EQ(reply->results(1).reason(), "store_error");
  EXPECT_NE(reply->results(1).detail().find("ERR oops"), std::string::npos);
  EXPECT_EQ(reply->results(2).status(), v1::STORED);
  const std::string page = registry_.serialize();
  EXPECT_NE(page.find("chessrl_replay_games_stored_total 2"), std::string::npos);
  EXPECT_NE(page.find("chessrl_replay_store_errors_total 1"), std::string::npos);
}

TEST_F(ReplayStoreResultsTest, TheRegistryKeepsTheNewestVersionsAndTheBest) {
  start(2);
  publish(1);
  publish(2);
  ASSERT_TRUE(registry_client_->set_best(1).ok());
  publish(3);  // 1 is the best, 2 and 3 the newest: nothing goes
  EXPECT_EQ(kept(), (std::vector<std::uint64_t>{1, 2, 3}));
  publish(4);  // 2 goes
  EXPECT_EQ(kept(), (std::vector<std::uint64_t>{1, 3, 4}));
  auto gone = registry_client_->get(2);
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.error().find("NOT_FOUND"), std::string::npos) << gone.error();
  EXPECT_NE(gone.error().find("no version 2 "), std::string::npos) << gone.error();
  EXPECT_NE(gone.error().find("pruned"), std::string::npos) << gone.error();
  EXPECT_EQ(registry_client_->get(1)->second, "model 1");
  EXPECT_NE(registry_.serialize().find("chessrl_replay_models_pruned_total 1"), std::string::npos);
}

TEST_F(ReplayStoreResultsTest, KeepModelsZeroKeepsEveryVersion) {
  start(0);
  for (std::uint64_t v = 1; v <= 5; ++v) publish(v);
  EXPECT_EQ(kept(), (std::vector<std::uint64_t>{1, 2, 3, 4, 5}));
}

}  // namespace
}  // namespace chessrl::replay_service

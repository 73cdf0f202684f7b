// ShardedReplayStore over in-memory shards: routing by game id (stable,
// balanced, consistent), pushes split and merged, a failed shard, sampling
// uniform over the union of windows of different sizes, summed stats. The
// same store over real redis-servers, with one killed, is redis_sharded_test.
#include "chessrl/replay/sharded_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "chessrl/replay/memory_store.h"
#include "shard_uniformity.h"

namespace chessrl::replay {
namespace {

StoredGame game(const std::string& id, int positions) {
  StoredGame g;
  g.id = id;
  for (int i = 0; i < positions; ++i) g.positions.push_back(id + "/" + std::to_string(i));
  return g;
}

struct Shards {
  std::vector<std::unique_ptr<MemoryReplayStore>> stores;
  std::unique_ptr<ShardedReplayStore> sharded;

  explicit Shards(const std::vector<std::uint64_t>& capacities) {
    std::vector<ReplayStore*> raw;
    std::vector<std::string> names;
    for (std::size_t s = 0; s < capacities.size(); ++s) {
      stores.push_back(std::make_unique<MemoryReplayStore>(capacities[s]));
      raw.push_back(stores.back().get());
      names.push_back("mem-" + std::to_string(s));
    }
    ShardedStoreOptions options;
    options.refresh_interval = std::chrono::milliseconds(0);
    sharded = std::make_unique<ShardedReplayStore>(raw, names, std::move(options));
  }
};

TEST(ShardOfGame, IsStableAcrossBuildsAndInRange) {
  // Fixed values (computed apart, from the algorithm's description): a change
  // of the hash would move every stored game's
  // dedup marker to another shard, so it must be deliberate.
  EXPECT_EQ(shard_of_game("game-0", 4), shard_of_game("game-0", 4));
  EXPECT_EQ(shard_of_game("anything", 1), 0u);
  const std::vector<std::size_t> golden = {shard_of_game("selfplay-0/1", 16),
                                           shard_of_game("selfplay-7/123456", 16),
                                           shard_of_game("", 16)};
  EXPECT_EQ(golden, (std::vector<std::size_t>{0, 8, 9}));
  for (int i = 0; i < 1000; ++i) EXPECT_LT(shard_of_game("g" + std::to_string(i), 7), 7u);
}

TEST(ShardOfGame, AddingAShardMovesAboutItsShareAndOnlyToIt) {
  constexpr int kIds = 100'000;
  for (const std::size_t n : {1u, 3u, 8u}) {
    int moved = 0;
    for (int i = 0; i < kIds; ++i) {
      const std::string id = "pod-" + std::to_string(i % 977) + "/" + std::to_string(i);
      const std::size_t before = shard_of_game(id, n);
      const std::size_t after = shard_of_game(id, n + 1);
      if (before != after) {
        ++moved;
        EXPECT_EQ(after, n) << id << " moved between old shards";
      }
    }
    const double expected = static_cast<double>(kIds) / static_cast<double>(n + 1);
    EXPECT_NEAR(moved, expected, 0.05 * expected) << "from " << n << " shards";
  }
}

TEST(SplitWindow, SumsToTheTotal) {
  EXPECT_EQ(split_window(10, 4), (std::vector<std::uint64_t>{3, 3, 2, 2}));
  EXPECT_EQ(split_window(8, 1), (std::vector<std::uint64_t>{8}));
  const auto parts = split_window(1'000'003, 7);
  EXPECT_EQ(std::accumulate(parts.begin(), parts.end(), std::uint64_t{0}), 1'000'003u);
}

// 10^5 games over 4 shards: each shard's stored positions within ±3% of the
// mean (the binomial sd is about 0.3%).
TEST(ShardedReplayStore, BalancesGamesOverShards) {
  Shards shards({1u << 30, 1u << 30, 1u << 30, 1u << 30});
  std::vector<StoredGame> batch;
  for (int i = 0; i < 100'000; ++i) {
    batch.push_back(game("selfplay-" + std::to_string(i % 1000) + "/" + std::to_string(i), 3));
    if (batch.size() == 32 || i == 99'999) {
      auto pushed = shards.sharded->push(batch);
      ASSERT_TRUE(pushed.ok()) << pushed.error();
      for (const PushResult& r : *pushed) ASSERT_EQ(r.status, PushStatus::kStored);
      batch.clear();
    }
  }
  auto total = shards.sharded->stats();
  ASSERT_TRUE(total.ok());
  EXPECT_EQ(total->positions, 300'000u);
  EXPECT_EQ(total->games, 100'000u);
  const double mean = 300'000.0 / 4;
  for (auto& store : shards.stores) {
    auto stats = store->stats();
    ASSERT_TRUE(stats.ok());
    EXPECT_NEAR(static_cast<double>(stats->positions), mean, 0.03 * mean);
  }
}

TEST(ShardedReplayStore, KeepsResultsInOrderAndDeduplicatesOnTheOwningShard) {
  Shards shards({1000, 1000, 1000});
  std::vector<StoredGame> games;
  for (int i = 0; i < 20; ++i) games.push_back(game("g" + std::to_string(i), 2));
  auto first = shards.sharded->push(games);
  ASSERT_TRUE(first.ok());
  for (const PushResult& r : *first) EXPECT_EQ(r.status, PushStatus::kStored);
  // Again, with one new game in the middle: only it is stored.
  games.insert(games.begin() + 10, game("new", 2));
  auto second = shards.sharded->push(games);
  ASSERT_TRUE(second.ok());
  for (std::size_t i = 0; i < games.size(); ++i)
    EXPECT_EQ((*second)[i].status, i == 10 ? PushStatus::kStored : PushStatus::kDuplicate) << i;
  // Every game is whole on the shard its id names, and nowhere else.
  for (const StoredGame& g : games) {
    const std::size_t owner = shard_of_game(g.id, 3);
    for (std::size_t s = 0; s < 3; ++s) {
      auto again = shards.stores[s]->push(std::vector<StoredGame>{g});
      ASSERT_TRUE(again.ok());
      EXPECT_EQ((*again)[0].status, s == owner ? PushStatus::kDuplicate : PushStatus::kStored)
          << g.id << " on shard " << s;
    }
  }
}

TEST(ShardedReplayStore, AFailedShardFailsOnlyItsGames) {
  Shards shards({1000, 1000});
  shards.stores[1]->set_failure("connection refused");
  std::vector<StoredGame> games;
  for (int i = 0; i < 40; ++i) games.push_back(game("f" + std::to_string(i), 1));
  auto pushed = shards.sharded->push(games);
  ASSERT_TRUE(pushed.ok()) << pushed.error();
  int failed = 0;
  for (std::size_t i = 0; i < games.size(); ++i) {
    const bool on_failed_shard = shard_of_game(games[i].id, 2) == 1;
    const PushResult& r = (*pushed)[i];
    EXPECT_EQ(r.status, on_failed_shard ? PushStatus::kFailed : PushStatus::kStored);
    if (on_failed_shard) {
      ++failed;
      EXPECT_NE(r.error.find("shard 1 (mem-1): connection refused"), std::string::npos) << r.error;
    }
  }
  EXPECT_GT(failed, 5);
  EXPECT_LT(failed, 35);

  // The stats go on, from the shard that answers, saying one is down.
  auto stats = shards.sharded->stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->shards_down, 1u);
  EXPECT_EQ(stats->games, static_cast<std::uint64_t>(40 - failed));
  // So does sampling.
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    auto sampled = shards.sharded->sample(8, seed);
    ASSERT_TRUE(sampled.ok()) << sampled.error();
    EXPECT_EQ(sampled->positions.size(), 8u);
  }

  // Every shard down: the call fails and acknowledges nothing.
  shards.stores[0]->set_failure("timeout");
  EXPECT_FALSE(shards.sharded->push(games).ok());
  EXPECT_FALSE(shards.sharded->stats().ok());
  auto none = shards.sharded->sample(8, 1);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.kind(), StoreErrorKind::kUnavailable);

  // Back: the failed games go in, the others are duplicates.
  shards.stores[0]->set_failure("");
  shards.stores[1]->set_failure("");
  auto again = shards.sharded->push(games);
  ASSERT_TRUE(again.ok());
  for (std::size_t i = 0; i < games.size(); ++i) {
    const bool on_failed_shard = shard_of_game(games[i].id, 2) == 1;
    EXPECT_EQ((*again)[i].status, on_failed_shard ? PushStatus::kStored : PushStatus::kDuplicate);
  }
}

// The trainer's reuse gate reads positions_total: a shard that goes away and
// comes back must neither drop it nor make it jump.
TEST(ShardedReplayStore, StatsCountAShardDownAsLastSeen) {
  Shards shards({1000, 1000});
  std::vector<StoredGame> games;
  for (int i = 0; i < 40; ++i) games.push_back(game("s" + std::to_string(i), 2));
  ASSERT_TRUE(shards.sharded->push(games).ok());
  auto before = shards.sharded->stats();
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(before->positions_total, 80u);
  shards.stores[1]->set_failure("connection refused");
  auto during = shards.sharded->stats();
  ASSERT_TRUE(during.ok());
  EXPECT_EQ(during->shards_down, 1u);
  EXPECT_EQ(during->positions_total, 80u);
  EXPECT_EQ(during->games, 40u);
  shards.stores[1]->set_failure("");
  auto after = shards.sharded->stats();
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->shards_down, 0u);
  EXPECT_EQ(after->positions_total, 80u);
}

// A shard whose window answers stats but whose sample finds damaged data.
class DamagedShard final : public ReplayStore {
 public:
  explicit DamagedShard(ReplayStore& inner) : inner_(inner) {}
  Result<std::vector<PushResult>> push(std::span<const StoredGame> games) override {
    return inner_.push(games);
  }
  StoreResult<SampledPositions> sample(std::size_t, std::uint64_t) override {
    return store_fail(StoreErrorKind::kDataLoss, "a stored position is missing");
  }
  Result<WindowStats> stats() override { return inner_.stats(); }

 private:
  ReplayStore& inner_;
};

TEST(ShardedReplayStore, DamagedDataIsNotHiddenByAnotherShard) {
  MemoryReplayStore a(1000), b(1000);
  DamagedShard damaged_a(a), damaged_b(b);
  ShardedReplayStore sharded({&damaged_a, &damaged_b}, {"a", "b"});
  ASSERT_TRUE(
      sharded.push(std::vector<StoredGame>{game("a", 5), game("b", 5), game("c", 5), game("d", 5)})
          .ok());
  auto sampled = sharded.sample(4, 7);
  ASSERT_FALSE(sampled.ok());
  EXPECT_EQ(sampled.kind(), StoreErrorKind::kDataLoss);
}

TEST(ShardedReplayStore, EmptyWindowsSampleNothing) {
  Shards shards({100, 100});
  auto sampled = shards.sharded->sample(16, 3);
  ASSERT_TRUE(sampled.ok());
  EXPECT_TRUE(sampled->positions.empty());
  EXPECT_EQ(sampled->window_positions, 0u);
}

// Shards of capacities 1:2:3:4, full; 10^6 draws of one position each: each
// shard's share within ±0.3 points of its window share, and a chi-square over
// (shard, age decile within the shard's window) cells below the p = 0.001
// bound. A sampler that picked shards evenly fails the first; one that
// favoured a shard's newest positions, the second.
TEST(ShardedReplayStore, SamplesUniformlyOverTheUnionOfWindows) {
  const std::vector<std::uint64_t> capacities = {2000, 4000, 6000, 8000};
  Shards shards(capacities);
  // One position a game, "i": more than twice each window, so every window
  // is full and has turned over.
  constexpr int kGames = 60'000;
  std::vector<std::vector<int>> routed(capacities.size());  // game numbers, oldest first
  std::vector<StoredGame> batch;
  for (int i = 0; i < kGames; ++i) {
    StoredGame g;
    g.id = "u" + std::to_string(i);
    g.positions.push_back(std::to_string(i));
    routed[shard_of_game(g.id, capacities.size())].push_back(i);
    batch.push_back(std::move(g));
    if (batch.size() == 64) {
      ASSERT_TRUE(shards.sharded->push(batch).ok());
      batch.clear();
    }
  }
  ASSERT_TRUE(shards.sharded->push(batch).ok());
  // Each game's (shard, age decile): its rank among the shard's window.
  const std::vector<int> cell_of = shard_uniformity::cells_of_games(routed, capacities, kGames);
  constexpr int kDraws = 1'000'000;
  std::vector<double> cells(capacities.size() * 10, 0);
  for (int d = 0; d < kDraws; ++d) {
    auto sampled = shards.sharded->sample(1, static_cast<std::uint64_t>(d) + 1);
    ASSERT_TRUE(sampled.ok());
    ASSERT_EQ(sampled->positions.size(), 1u);
    ASSERT_EQ(sampled->window_positions, 20'000u);
    const int cell = cell_of[std::stoi(sampled->positions[0])];
    ASSERT_GE(cell, 0) << "drew a position outside the windows";
    cells[static_cast<std::size_t>(cell)] += 1;
  }
  shard_uniformity::expect_uniform_over_union(cells, capacities);
}

}  // namespace
}  // namespace chessrl::replay

// ShardedReplayStore over real redis-servers on loopback (AOF, appendfsync
// always, so what a shard acknowledged survives its SIGKILL):
// - producers push while one shard is killed and restarted: the games routed
//   to it come back kFailed and are pushed again; at the end every
//   acknowledged game is stored exactly once, on its own shard;
// - 10^5 games over 4 shards: each shard within ±3% of the mean;
// - sampling over shards of windows 1:2:3:4: 10^6 one-position draws, each
//   shard's share within ±0.3 points of its window share, and uniform over
//   the age of positions within each window (chi-square).
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "chessrl/replay/sharded_store.h"
#include "redis_test_util.h"
#include "shard_uniformity.h"

namespace chessrl::replay {
namespace {

using namespace redis_test;

struct RedisShards {
  std::vector<std::unique_ptr<harness::RedisServer>> servers;
  std::vector<std::unique_ptr<RedisReplayStore>> stores;
  std::unique_ptr<ShardedReplayStore> sharded;

  explicit RedisShards(const std::vector<std::uint64_t>& windows) {
    std::vector<ReplayStore*> raw;
    std::vector<std::string> names;
    for (const std::uint64_t window : windows) {
      servers.push_back(harness::RedisServer::start());
      RedisOptions options = options_for(*servers.back());
      options.window_positions = window;
      stores.push_back(std::make_unique<RedisReplayStore>(options));
      raw.push_back(stores.back().get());
      names.push_back("127.0.0.1:" + std::to_string(servers.back()->port()));
    }
    ShardedStoreOptions options;
    options.refresh_interval = 200ms;
    sharded = std::make_unique<ShardedReplayStore>(raw, names, std::move(options));
  }

  // Games in shard `s`'s window (LLEN of its window list).
  std::uint64_t games_on(std::size_t s) const {
    return std::stoull(servers[s]->cli({"LLEN", "t:window"}));
  }
};

TEST(RedisShardedStore, AShardKilledAndRestartedLosesAndDuplicatesNothing) {
  RedisShards shards({1'000'000, 1'000'000, 1'000'000});
  constexpr int kProducers = 8;
  std::atomic<bool> stop{false};
  std::atomic<int> failed_answers{0};
  std::mutex mutex;
  std::map<std::string, int> acknowledged;  // game id -> times answered kStored
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      std::vector<StoredGame> pending;
      int next = 0;
      while (!stop.load() || !pending.empty()) {
        while (!stop.load() && pending.size() < 16)
          pending.push_back(game("p" + std::to_string(p) + "/" + std::to_string(next++), 3));
        auto pushed = shards.sharded->push(pending);
        if (!pushed.ok()) {
          std::this_thread::sleep_for(20ms);
          continue;
        }
        std::vector<StoredGame> again;
        for (std::size_t i = 0; i < pending.size(); ++i) {
          const PushResult& r = (*pushed)[i];
          if (r.status == PushStatus::kFailed) {
            ++failed_answers;
            again.push_back(std::move(pending[i]));
          } else if (r.status == PushStatus::kStored) {
            std::lock_guard lock(mutex);
            ++acknowledged[pending[i].id];
          } else {  // a duplicate: stored by an earlier, unacknowledged push
            std::lock_guard lock(mutex);
            acknowledged.try_emplace(pending[i].id, 0);
          }
        }
        pending = std::move(again);
        if (!pending.empty()) std::this_thread::sleep_for(20ms);
      }
    });
  }
  std::this_thread::sleep_for(1500ms);
  shards.servers[1]->kill();
  std::this_thread::sleep_for(1000ms);
  // While it is down, the others go on: sampling too.
  auto sampled = shards.sharded->sample(64, 5);
  ASSERT_TRUE(sampled.ok()) << sampled.error();
  EXPECT_EQ(sampled->positions.size(), 64u);
  auto stats_down = shards.sharded->stats();
  ASSERT_TRUE(stats_down.ok()) << stats_down.error();
  EXPECT_EQ(stats_down->shards_down, 1u);
  shards.servers[1]->restart();
  std::this_thread::sleep_for(1500ms);
  stop = true;
  for (auto& t : producers) t.join();

  EXPECT_GT(failed_answers.load(), 0) << "no push met the dead shard";
  std::uint64_t stored_total = 0;
  std::vector<std::uint64_t> per_shard(3, 0);
  for (const auto& [id, times] : acknowledged) {
    EXPECT_LE(times, 1) << id << " acknowledged as stored twice";
    ++per_shard[shard_of_game(id, 3)];
    ++stored_total;
  }
  // Every game ever answered kStored or kDuplicate is in its shard's window,
  // and nothing else is.
  for (std::size_t s = 0; s < 3; ++s) EXPECT_EQ(shards.games_on(s), per_shard[s]) << "shard " << s;
  auto stats = shards.sharded->stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->shards_down, 0u);
  EXPECT_EQ(stats->games, stored_total);
  EXPECT_EQ(stats->positions, 3 * stored_total);
  EXPECT_GT(stored_total, 200u);
}

TEST(RedisShardedStore, BalancesAHundredThousandGamesOverFourShards) {
  RedisShards shards({1u << 30, 1u << 30, 1u << 30, 1u << 30});
  std::vector<StoredGame> batch;
  for (int i = 0; i < 100'000; ++i) {
    batch.push_back(game("selfplay-" + std::to_string(i % 1000) + "/" + std::to_string(i), 1));
    if (batch.size() == 256 || i == 99'999) {
      auto pushed = shards.sharded->push(batch);
      ASSERT_TRUE(pushed.ok()) << pushed.error();
      batch.clear();
    }
  }
  const double mean = 100'000.0 / 4;
  std::uint64_t sum = 0;
  for (std::size_t s = 0; s < 4; ++s) {
    const std::uint64_t games = shards.games_on(s);
    EXPECT_NEAR(static_cast<double>(games), mean, 0.03 * mean) << "shard " << s;
    sum += games;
  }
  EXPECT_EQ(sum, 100'000u);
}

// Windows 1:2:3:4, 10^6 one-position draws: each shard's share within ±0.3
// points of its window share, and a chi-square over (shard, age decile in
// its window) cells below the p = 0.001 bound.
TEST(RedisShardedStore, SamplesUniformlyOverTheUnionOfWindows) {
  const std::vector<std::uint64_t> windows = {1000, 2000, 3000, 4000};
  RedisShards shards(windows);
  constexpr int kGames = 25'000;
  std::vector<std::vector<int>> routed(4);  // game numbers on each shard, oldest first
  std::vector<StoredGame> batch;
  for (int i = 0; i < kGames; ++i) {
    batch.push_back(game("w" + std::to_string(i), 1));
    routed[shard_of_game(batch.back().id, 4)].push_back(i);
    if (batch.size() == 256 || i == kGames - 1) {
      ASSERT_TRUE(shards.sharded->push(batch).ok());
      batch.clear();
    }
  }
  for (std::size_t s = 0; s < 4; ++s) ASSERT_EQ(shards.games_on(s), windows[s]);
  const std::vector<int> cell_of = shard_uniformity::cells_of_games(routed, windows, kGames);
  // A drawn position "w<i>/0" names its game.
  constexpr int kDraws = 1'000'000;
  std::vector<double> cells(40, 0);
  for (int d = 0; d < kDraws; ++d) {
    auto sampled = shards.sharded->sample(1, static_cast<std::uint64_t>(d) + 1);
    ASSERT_TRUE(sampled.ok()) << sampled.error();
    ASSERT_EQ(sampled->positions.size(), 1u);
    ASSERT_EQ(sampled->window_positions, 10'000u);
    const std::string& p = sampled->positions[0];
    const int cell = cell_of[std::stoi(p.substr(1, p.find('/') - 1))];
    ASSERT_GE(cell, 0) << p << " is not in a window";
    cells[static_cast<std::size_t>(cell)] += 1;
  }
  shard_uniformity::expect_uniform_over_union(cells, windows);
}

}  // namespace
}  // namespace chessrl::replay

// Redis memory is bounded by the window: a long ingest (100 windows' worth of
// games) into a small window leaves INFO used_memory where it was once the
// window first filled, within ±2% from the second window on; a position of a
// validated game's size costs at most 320 bytes, and 4 shards of a quarter of
// the window cost at most 5% more than one shard of the whole. Before dedup markers were tied to
// the window, each evicted game left a marker for a week and memory grew with every game.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "chessrl/harness/redis_server.h"
#include "chessrl/replay/redis_store.h"
#include "chessrl/replay/sharded_store.h"
#include "redis_test_util.h"

namespace chessrl::replay {
namespace {

using namespace chessrl::replay::redis_test;

std::uint64_t used_memory(RedisReplayStore& store) {
  auto info = store.server_info();
  EXPECT_TRUE(info.ok()) << info.error();
  return info.ok() && info->has_value() ? (*info)->used_memory_bytes : 0;
}

TEST(RedisStoreMemory, UsedMemoryStaysFlatOverALongIngest) {
  harness::RedisServer::Options server_options;
  server_options.appendonly = false;  // memory does not depend on it; the test runs faster
  auto server = harness::RedisServer::start(server_options);
  constexpr int kPositionsPerGame = 10;
  constexpr int kWindowGames = 500;
  constexpr int kWindows = 100;
  constexpr int kBatch = 100;
  RedisOptions options = options_for(*server);
  options.window_positions = kWindowGames * kPositionsPerGame;
  options.allow_unpersisted = true;  // no AOF, as above
  RedisReplayStore store(options);
  const std::string position(100, 'p');

  std::uint64_t after_first_window = 0;
  std::uint64_t last = 0;
  std::vector<double> steady;  // used_memory after each window from the second on
  int pushed = 0;
  for (int w = 0; w < kWindows; ++w) {
    for (int b = 0; b < kWindowGames / kBatch; ++b) {
      std::vector<StoredGame> games;
      for (int k = 0; k < kBatch; ++k) {
        StoredGame g;
        // Ids as long as self-play's (a 64-bit hex seed and a counter).
        g.id = "selfplay-7f3a9c21d4e8b605-" + std::to_string(pushed++);
        g.positions.assign(kPositionsPerGame, position);
        games.push_back(std::move(g));
      }
      const auto statuses = push_ok(store, std::move(games));
      ASSERT_EQ(statuses, std::vector<PushStatus>(kBatch, PushStatus::kStored));
    }
    // After the second window: the first full window plus one window of
    // evictions (whose markers are kept), the steady state.
    if (w == 1) after_first_window = used_memory(store);
    if (w >= 1) steady.push_back(static_cast<double>(used_memory(store)));
    if (w % 20 == 19) {
      last = used_memory(store);
      std::printf("after %d windows (%d games): used_memory %llu bytes\n", w + 1, pushed,
                  static_cast<unsigned long long>(last));
    }
  }
  const WindowStats stats = store.stats().value_or_throw();
  EXPECT_EQ(stats.games, static_cast<std::uint64_t>(kWindowGames));
  EXPECT_EQ(stats.games_total, static_cast<std::uint64_t>(pushed));
  ASSERT_GT(after_first_window, 0u);
  EXPECT_LE(static_cast<double>(last), 1.10 * static_cast<double>(after_first_window))
      << "used_memory grew from " << after_first_window << " bytes after 2 windows to " << last
      << " after " << kWindows;
  // Flat: every window's reading within ±2% of their mean.
  double mean = 0;
  for (double m : steady) mean += m / static_cast<double>(steady.size());
  for (std::size_t i = 0; i < steady.size(); ++i)
    EXPECT_NEAR(steady[i], mean, 0.02 * mean) << "after window " << i + 2;
}

// What `shards` Redis servers hold for a window of `window` positions split
// over them (split_window) after `turnovers` windows' worth of 100-position
// games: Σ used_memory less each server's used_memory before the first push.
struct WindowCost {
  double bytes = 0;      // Σ used_memory growth
  double positions = 0;  // Σ positions in the windows
};

WindowCost window_cost(std::size_t shards, std::uint64_t window, int turnovers) {
  constexpr int kPositionsPerGame = 100;
  constexpr int kBatch = 32;
  std::vector<std::unique_ptr<harness::RedisServer>> servers;
  std::vector<std::unique_ptr<RedisReplayStore>> stores;
  std::vector<ReplayStore*> parts;
  std::vector<std::string> names;
  const std::vector<std::uint64_t> windows = split_window(window, shards);
  for (std::size_t i = 0; i < shards; ++i) {
    harness::RedisServer::Options server_options;
    server_options.appendonly = false;  // memory does not depend on it
    servers.push_back(harness::RedisServer::start(server_options));
    RedisOptions options = options_for(*servers.back());
    options.window_positions = windows[i];
    options.allow_unpersisted = true;
    stores.push_back(std::make_unique<RedisReplayStore>(options));
    parts.push_back(stores.back().get());
    names.push_back("shard" + std::to_string(i));
  }
  ShardedReplayStore store(parts, names);
  EXPECT_TRUE(store.stats().ok());  // scripts loaded before the baseline
  double empty = 0;
  for (auto& s : stores) empty += static_cast<double>(used_memory(*s));
  // Positions of about a validated TrainingPosition's size (a FEN, up to 7
  // history moves, a 16-move policy): 180 bytes.
  const std::string position(180, 'p');
  const int games = static_cast<int>(window / kPositionsPerGame) * turnovers;
  for (int pushed = 0; pushed < games;) {
    std::vector<StoredGame> batch;
    for (int k = 0; k < kBatch && pushed < games; ++k) {
      StoredGame g;
      g.id = "selfplay-7f3a9c21d4e8b605-" + std::to_string(pushed++);
      g.positions.assign(kPositionsPerGame, position);
      batch.push_back(std::move(g));
    }
    auto results = store.push(batch);
    EXPECT_TRUE(results.ok()) << results.error();
    if (!results.ok()) return {};
  }
  WindowCost cost;
  for (auto& s : stores) cost.bytes += static_cast<double>(used_memory(*s));
  cost.bytes -= empty;
  cost.positions = static_cast<double>(store.stats().value_or_throw().positions);
  return cost;
}

// Splitting the window over 4 shards costs no more than 5% more memory than
// one shard of the whole window (the data of a window is the same; what each
// server holds besides is subtracted), and a position costs at most 320 bytes.
TEST(RedisStoreMemory, FourShardsOfAQuarterCostAboutWhatOneWindowCosts) {
  constexpr std::uint64_t kWindow = 400'000;
  const WindowCost one = window_cost(1, kWindow, 3);
  const WindowCost four = window_cost(4, kWindow, 3);
  ASSERT_GT(one.positions, 0.9 * kWindow);
  ASSERT_GT(four.positions, 0.9 * kWindow);
  const double one_per_position = one.bytes / one.positions;
  const double four_per_position = four.bytes / four.positions;
  std::printf("1 shard: %.0f bytes/position; 4 shards: %.0f bytes/position (%.3fx)\n",
              one_per_position, four_per_position, four_per_position / one_per_position);
  EXPECT_LE(one_per_position, 320.0);
  EXPECT_LE(four_per_position, 1.05 * one_per_position);
}

}  // namespace
}  // namespace chessrl::replay

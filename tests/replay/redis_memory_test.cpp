// Redis memory is bounded by the window: a long ingest (100 windows' worth of
// games) into a small window leaves INFO used_memory where it was once the
// window first filled. Before dedup markers were tied to the window, each
// evicted game left a marker for a week and memory grew with every game.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "chessrl/harness/redis_server.h"
#include "chessrl/replay/redis_store.h"
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
}

}  // namespace
}  // namespace chessrl::replay

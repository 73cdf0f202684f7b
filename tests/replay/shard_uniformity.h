// What the two sharded sampling tests share (sharded_store_test over
// in-memory shards, redis_sharded_test over redis-servers): one-position games
// numbered 0.., each drawn position placed in a (shard, age decile within its
// shard's window) cell, and the check of the cells against the window shares.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

namespace chessrl::replay::shard_uniformity {

// The cell of each game (-1: in no window) when routed[s] lists the games
// that went to shard s, oldest first, and shard s keeps the newest windows[s].
inline std::vector<int> cells_of_games(const std::vector<std::vector<int>>& routed,
                                       const std::vector<std::uint64_t>& windows, int games) {
  std::vector<int> cell_of(static_cast<std::size_t>(games), -1);
  for (std::size_t s = 0; s < windows.size(); ++s) {
    EXPECT_GE(routed[s].size(), windows[s]) << "shard " << s << "'s window is not full";
    if (routed[s].size() < windows[s]) continue;
    const std::size_t first = routed[s].size() - windows[s];
    for (std::size_t k = first; k < routed[s].size(); ++k)
      cell_of[static_cast<std::size_t>(routed[s][k])] =
          static_cast<int>(s * 10 + (k - first) * 10 / windows[s]);
  }
  return cell_of;
}

// Each shard's share of the draws within ±0.3 points of its share of the
// windows, and a chi-square over the (shard, decile) cells below the p = 0.001
// bound for 4 shards (40 cells, 39 degrees of freedom: 72.05).
inline void expect_uniform_over_union(const std::vector<double>& cells,
                                      const std::vector<std::uint64_t>& windows) {
  ASSERT_EQ(windows.size(), 4u);
  ASSERT_EQ(cells.size(), 40u);
  const double draws = std::accumulate(cells.begin(), cells.end(), 0.0);
  const double total =
      static_cast<double>(std::accumulate(windows.begin(), windows.end(), std::uint64_t{0}));
  double chi_square = 0;
  for (std::size_t s = 0; s < windows.size(); ++s) {
    const double share = static_cast<double>(windows[s]) / total;
    double drawn = 0;
    for (std::size_t decile = 0; decile < 10; ++decile) {
      const double observed = cells[s * 10 + decile];
      const double expected = draws * share / 10;
      chi_square += (observed - expected) * (observed - expected) / expected;
      drawn += observed;
    }
    EXPECT_NEAR(drawn / draws, share, 0.003) << "shard " << s;
  }
  EXPECT_LT(chi_square, 72.05);
}

}  // namespace chessrl::replay::shard_uniformity

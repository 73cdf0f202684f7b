// ShardedReplayStore: one ReplayStore over N independent stores (N Redis
// primaries in the service), so that ingest, eviction and sampling divide over
// N Redis main threads. No shard knows of the others; this class is the only
// place that does.
//
// - A game goes whole to one shard, chosen by a stable hash of its id
//   (shard_of_game: FNV-1a, SplitMix64, jump consistent hash), so its dedup
//   marker is on the shard that stores it and a retried push finds it there.
// - push() splits a batch by shard and pushes the parts at once (one thread
//   per shard part beyond the first); each game's result comes from its shard.
//   A shard whose call fails answers kFailed for its games while the other
//   shards' games are stored: not acknowledged, as a failed call of one
//   store (some may be written; pushing them again is safe and finds those
//   as kDuplicate). Only when every shard's call fails does push() fail.
// - sample() draws the whole call from one shard, chosen with probability
//   its share of the positions in all windows: uniform over the union, one
//   round trip. Shard sizes are refreshed (stats(), one round trip a shard)
//   at most every `refresh_interval`, and from each sample's reply. A shard
//   that fails is skipped (weight 0 until the next refresh) and the draw
//   goes to another; the call fails only when every shard does.
// - stats() sums over the shards, a shard that does not answer as it was
//   last seen (so the totals neither drop nor jump with an outage), says how
//   many did not answer (WindowStats::shards_down), and fails only when none
//   does, so that one shard down leaves the service serving the others.
//   server_info() sums the shards that answer.
//
// Thread-safe when every shard is. With one shard every call goes straight
// to it: N = 1 behaves as that store alone.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chessrl/replay/replay_store.h"

namespace chessrl::replay {

// The shard of `game_id` among `shards` (> 0): stable across processes,
// builds and platforms; moving from N to N + 1 shards moves about 1/(N + 1) of
// the ids (jump consistent hash, Lamping and Veach 2014).
std::size_t shard_of_game(std::string_view game_id, std::size_t shards);

// `total` positions split over `shards` windows so that they sum to it: the
// first total % shards get one more.
std::vector<std::uint64_t> split_window(std::uint64_t total, std::size_t shards);

struct ShardedStoreOptions {
  std::chrono::milliseconds refresh_interval{1000};
  // Called with each shard's stats whenever they are read (for per-shard
  // metrics); on the reading thread, so it must be quick and thread-safe.
  std::function<void(std::size_t shard, const Result<WindowStats>& stats)> on_shard_stats;
};

class ShardedReplayStore final : public ReplayStore {
 public:
  // `names` (one per shard, e.g. "127.0.0.1:6380") appear in errors. The
  // shards must outlive this store. Precondition: !shards.empty(),
  // names.size() == shards.size().
  ShardedReplayStore(std::vector<ReplayStore*> shards, std::vector<std::string> names,
                     ShardedStoreOptions options = {});

  Result<std::vector<PushResult>> push(std::span<const StoredGame> games) override;
  StoreResult<SampledPositions> sample(std::size_t count, std::uint64_t seed) override;
  Result<WindowStats> stats() override;
  Result<std::optional<StoreServerInfo>> server_info() override;

  std::size_t shard_count() const { return shards_.size(); }
  // Each shard's stats, in shard order (for per-shard metrics and tests).
  std::vector<Result<WindowStats>> shard_stats();

 private:
  // Reads every shard's size when the last reading is older than
  // refresh_interval (one caller at a time; the others go on with the old).
  void refresh_sizes_if_stale();
  // The shard `seed` picks by window share among those not in `skip`;
  // nullopt when none of them has positions.
  std::optional<std::size_t> pick_shard(std::uint64_t seed, const std::vector<bool>& skip);

  std::vector<ReplayStore*> shards_;
  std::vector<std::string> names_;
  ShardedStoreOptions options_;
  std::mutex mutex_;                  // guards sizes_ and refreshed_
  std::vector<std::uint64_t> sizes_;  // positions in each shard's window, as last seen
  std::vector<std::string> down_;     // why each shard's last stats failed; empty: it answered
  std::vector<std::optional<WindowStats>> last_stats_;  // each shard's last stats() answer
  std::chrono::steady_clock::time_point refreshed_{};
  bool refreshing_ = false;
};

}  // namespace chessrl::replay

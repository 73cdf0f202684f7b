#include "chessrl/replay/sharded_store.h"

#include <algorithm>
#include <cassert>
#include <future>
#include <utility>

#include "chessrl/core/splitmix64.h"

namespace chessrl::replay {

namespace {

// FNV-1a, 64 bits: a byte-wise hash with the same value on every platform
// (std::hash promises no such thing).
std::uint64_t fnv1a64(std::string_view bytes) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

// Lamping and Veach, "A Fast, Minimal Memory, Consistent Hash Algorithm" (2014).
std::size_t jump_consistent_hash(std::uint64_t key, std::size_t buckets) {
  std::int64_t b = -1;
  std::int64_t j = 0;
  while (j < static_cast<std::int64_t>(buckets)) {
    b = j;
    key = key * 2862933555777941757ULL + 1;
    j = static_cast<std::int64_t>(
        static_cast<double>(b + 1) *
        (static_cast<double>(1LL << 31) / static_cast<double>((key >> 33) + 1)));
  }
  return static_cast<std::size_t>(b);
}

constexpr std::uint64_t kShardSeedSalt = 0x5AD0'5EED'0000'0001ULL;

}  // namespace

std::size_t shard_of_game(std::string_view game_id, std::size_t shards) {
  assert(shards > 0);
  if (shards == 1) return 0;
  return jump_consistent_hash(mix64(fnv1a64(game_id)), shards);
}

std::vector<std::uint64_t> split_window(std::uint64_t total, std::size_t shards) {
  assert(shards > 0);
  std::vector<std::uint64_t> out(shards, total / shards);
  for (std::size_t i = 0; i < total % shards; ++i) ++out[i];
  return out;
}

ShardedReplayStore::ShardedReplayStore(std::vector<ReplayStore*> shards,
                                       std::vector<std::string> names, ShardedStoreOptions options)
    : shards_(std::move(shards)),
      names_(std::move(names)),
      options_(options),
      sizes_(shards_.size(), 0),
      down_(shards_.size()),
      last_stats_(shards_.size()) {
  assert(!shards_.empty());
  assert(names_.size() == shards_.size());
}

Result<std::vector<PushResult>> ShardedReplayStore::push(std::span<const StoredGame> games) {
  if (shards_.size() == 1) return shards_[0]->push(games);
  std::vector<std::vector<std::size_t>> routed(shards_.size());
  for (std::size_t i = 0; i < games.size(); ++i)
    routed[shard_of_game(games[i].id, shards_.size())].push_back(i);

  std::vector<PushResult> results(games.size());
  // One shard's part: its games (copied: a shard takes a contiguous span) and
  // their results, or every game kFailed naming the shard.
  auto push_part = [&](std::size_t shard) {
    const std::vector<std::size_t>& index = routed[shard];
    std::vector<StoredGame> part;
    part.reserve(index.size());
    for (const std::size_t i : index) part.push_back(games[i]);
    auto pushed = shards_[shard]->push(part);
    for (std::size_t k = 0; k < index.size(); ++k) {
      if (pushed.ok()) {
        results[index[k]] = (*pushed)[k];
      } else {
        results[index[k]] =
            PushResult{PushStatus::kFailed, "shard " + std::to_string(shard) + " (" +
                                                names_[shard] + "): " + pushed.error()};
      }
    }
    return pushed.ok();
  };

  std::vector<std::size_t> parts;
  for (std::size_t s = 0; s < shards_.size(); ++s)
    if (!routed[s].empty()) parts.push_back(s);
  std::vector<std::future<bool>> others;
  others.reserve(parts.size());
  for (std::size_t p = 1; p < parts.size(); ++p)
    others.push_back(std::async(std::launch::async, push_part, parts[p]));
  bool any_ok = parts.empty() || push_part(parts[0]);
  for (auto& other : others) any_ok = other.get() || any_ok;
  // Every part failed: nothing was acknowledged, as when one store fails.
  if (!any_ok) return fail(results.front().error);
  return results;
}

void ShardedReplayStore::refresh_sizes_if_stale() {
  {
    std::lock_guard lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    const bool never = refreshed_ == std::chrono::steady_clock::time_point{};
    const bool stale = never || now - refreshed_ >= options_.refresh_interval;
    // One caller refreshes, outside the lock; the others draw from the sizes
    // as they are, so a slow shard delays one call, not all (before the first
    // reading there are no sizes to go on: every caller reads them).
    if (!stale || (refreshing_ && !never)) return;
    refreshing_ = true;
  }
  shard_stats();  // updates sizes_, down_ and refreshed_
  std::lock_guard lock(mutex_);
  refreshing_ = false;
}

std::optional<std::size_t> ShardedReplayStore::pick_shard(std::uint64_t seed,
                                                          const std::vector<bool>& skip) {
  std::lock_guard lock(mutex_);
  std::uint64_t total = 0;
  for (std::size_t s = 0; s < shards_.size(); ++s)
    if (!skip[s]) total += sizes_[s];
  if (total == 0) return std::nullopt;
  std::uint64_t x = SplitMix64(seed).below(total);
  for (std::size_t s = 0; s < shards_.size(); ++s) {
    if (skip[s]) continue;
    if (x < sizes_[s]) return s;
    x -= sizes_[s];
  }
  return std::nullopt;  // not reached
}

StoreResult<SampledPositions> ShardedReplayStore::sample(std::size_t count, std::uint64_t seed) {
  if (shards_.size() == 1) return shards_[0]->sample(count, seed);
  refresh_sizes_if_stale();
  std::vector<bool> skip(shards_.size(), false);
  std::string errors;
  for (std::size_t attempt = 0; attempt < shards_.size(); ++attempt) {
    const auto shard = pick_shard(mix64(seed ^ mix64(attempt)), skip);
    if (!shard) break;
    auto sampled = shards_[*shard]->sample(count, mix64(seed ^ kShardSeedSalt));
    if (!sampled.ok()) {
      // Damaged data or a count over the limit: another shard would not help.
      if (sampled.kind() != StoreErrorKind::kUnavailable) return sampled;
      errors += (errors.empty() ? "" : "; ") + ("shard " + std::to_string(*shard) + " (" +
                                                names_[*shard] + "): " + sampled.error());
      std::lock_guard lock(mutex_);
      sizes_[*shard] = 0;  // until the next refresh
      skip[*shard] = true;
      continue;
    }
    std::uint64_t total = 0;
    {
      std::lock_guard lock(mutex_);
      sizes_[*shard] = sampled->window_positions;
      for (const std::uint64_t size : sizes_) total += size;
    }
    if (sampled->positions.empty()) {  // emptied since the sizes were read
      skip[*shard] = true;
      continue;
    }
    sampled->window_positions = total;
    return sampled;
  }
  {
    // Shards whose size could not be read were never tried: they count as
    // failures, so that every shard down is an error, not an empty window.
    std::lock_guard lock(mutex_);
    for (std::size_t s = 0; s < shards_.size(); ++s) {
      if (!skip[s] && !down_[s].empty()) {
        errors += (errors.empty() ? "" : "; ") +
                  ("shard " + std::to_string(s) + " (" + names_[s] + "): " + down_[s]);
      }
    }
  }
  if (!errors.empty()) {
    // Some shard answered with an empty window, the others failed: as good
    // as unreachable for the caller, who retries.
    return store_fail(StoreErrorKind::kUnavailable,
                      "Sample: no shard with positions answered: " + errors);
  }
  SampledPositions empty;  // every window is empty
  return empty;
}

std::vector<Result<WindowStats>> ShardedReplayStore::shard_stats() {
  std::vector<Result<WindowStats>> out;
  out.reserve(shards_.size());
  for (ReplayStore* shard : shards_) out.push_back(shard->stats());
  if (options_.on_shard_stats) {
    for (std::size_t s = 0; s < out.size(); ++s) options_.on_shard_stats(s, out[s]);
  }
  {
    std::lock_guard lock(mutex_);
    for (std::size_t s = 0; s < shards_.size(); ++s) {
      sizes_[s] = out[s].ok() ? out[s]->positions : 0;
      down_[s] = out[s].ok() ? std::string() : out[s].error();
    }
    refreshed_ = std::chrono::steady_clock::now();
  }
  return out;
}

Result<WindowStats> ShardedReplayStore::stats() {
  if (shards_.size() == 1) return shards_[0]->stats();
  WindowStats sum;
  std::string errors;
  std::size_t answered = 0;
  auto per_shard = shard_stats();
  std::lock_guard lock(mutex_);
  for (std::size_t s = 0; s < per_shard.size(); ++s) {
    const auto& stats = per_shard[s];
    if (stats.ok()) {
      ++answered;
      last_stats_[s] = *stats;
    } else {
      ++sum.shards_down;
      errors += (errors.empty() ? "" : "; ") +
                ("shard " + std::to_string(s) + " (" + names_[s] + "): " + stats.error());
    }
    // A shard down counts as last seen, so that the totals do not drop while
    // it is away and jump when it is back (the trainer's reuse gate reads
    // positions_total).
    if (!last_stats_[s]) continue;
    const WindowStats& one = *last_stats_[s];
    sum.games += one.games;
    sum.positions += one.positions;
    sum.capacity += one.capacity;
    sum.games_total += one.games_total;
    sum.positions_total += one.positions_total;
  }
  if (answered == 0) return fail("every replay shard failed: " + errors);
  return sum;
}

Result<std::optional<StoreServerInfo>> ShardedReplayStore::server_info() {
  if (shards_.size() == 1) return shards_[0]->server_info();
  std::optional<StoreServerInfo> sum;
  std::string errors;
  for (std::size_t s = 0; s < shards_.size(); ++s) {
    auto info = shards_[s]->server_info();
    if (!info.ok()) {
      errors += (errors.empty() ? "" : "; ") +
                ("shard " + std::to_string(s) + " (" + names_[s] + "): " + info.error());
      continue;
    }
    if (!info->has_value()) continue;
    const StoreServerInfo& one = **info;
    if (!sum) {
      sum = one;
      continue;
    }
    sum->used_memory_bytes += one.used_memory_bytes;
    // 0 is no limit: the sum has none when any shard has none.
    sum->max_memory_bytes = sum->max_memory_bytes == 0 || one.max_memory_bytes == 0
                                ? 0
                                : sum->max_memory_bytes + one.max_memory_bytes;
    sum->aof_enabled = sum->aof_enabled && one.aof_enabled;
    sum->aof_ok = sum->aof_ok && one.aof_ok;
    sum->rdb_ok = sum->rdb_ok && one.rdb_ok;
    sum->changes_since_save += one.changes_since_save;
    sum->last_save_unix = std::min(sum->last_save_unix, one.last_save_unix);
  }
  if (!sum && !errors.empty()) return fail("every replay shard failed: " + errors);
  return sum;
}

}  // namespace chessrl::replay

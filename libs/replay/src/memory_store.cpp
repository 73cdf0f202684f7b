#include "chessrl/replay/memory_store.h"

#include <utility>

#include "chessrl/core/splitmix64.h"

namespace chessrl::replay {


// --- MemoryReplayStore -------------------------------------------------------

MemoryReplayStore::MemoryReplayStore(std::uint64_t capacity_positions)
    : capacity_(capacity_positions) {}

Result<std::vector<PushResult>> MemoryReplayStore::push(std::span<const StoredGame> games) {
  std::lock_guard lock(mutex_);
  if (!failure_.empty()) return fail(failure_);
  std::vector<PushResult> results(games.size());
  for (std::size_t i = 0; i < games.size(); ++i) {
    const StoredGame& game = games[i];
    if (ids_.contains(game.id)) {
      results[i].status = PushStatus::kDuplicate;
      continue;
    }
    results[i].status = PushStatus::kStored;
    if (game.positions.empty()) {
      // As in Redis: counted, nothing kept (no window entry, no dedup id),
      // so such games cannot grow the store past its window of positions.
      ++games_total_;
      continue;
    }
    ids_.insert(game.id);
    window_.push_back(Game{game.id, first_seq_ + positions_.size(), game.positions.size()});
    positions_.insert(positions_.end(), game.positions.begin(), game.positions.end());
    ++games_total_;
    positions_total_ += game.positions.size();
  }
  while (!window_.empty() && positions_.size() > capacity_) {
    const Game& oldest = window_.front();
    positions_.erase(positions_.begin(),
                     positions_.begin() + static_cast<std::ptrdiff_t>(oldest.count));
    first_seq_ += oldest.count;
    evicted_ids_.push_back(oldest.id);
    window_.pop_front();
  }
  // As in Redis: the ids of evicted games are remembered for as many games
  // as the window holds, so memory stays bounded by the window.
  while (evicted_ids_.size() > window_.size()) {
    ids_.erase(evicted_ids_.front());
    evicted_ids_.pop_front();
  }
  return results;
}

StoreResult<SampledPositions> MemoryReplayStore::sample(std::size_t count, std::uint64_t seed) {
  std::lock_guard lock(mutex_);
  if (!failure_.empty()) return store_fail(failure_kind_, failure_);
  SampledPositions out;
  out.window_positions = positions_.size();
  if (positions_.empty()) return out;
  SplitMix64 rng(seed);
  out.positions.reserve(count);
  for (std::size_t i = 0; i < count; ++i)
    out.positions.push_back(positions_[static_cast<std::size_t>(rng.below(positions_.size()))]);
  return out;
}

Result<WindowStats> MemoryReplayStore::stats() {
  std::lock_guard lock(mutex_);
  if (!failure_.empty()) return fail(failure_);
  WindowStats s;
  s.games = window_.size();
  s.positions = positions_.size();
  s.capacity = capacity_;
  s.games_total = games_total_;
  s.positions_total = positions_total_;
  return s;
}

void MemoryReplayStore::set_failure(std::string message, StoreErrorKind kind) {
  std::lock_guard lock(mutex_);
  failure_ = std::move(message);
  failure_kind_ = kind;
}

// --- MemoryModelStore --------------------------------------------------------

StoreResult<PublishStatus> MemoryModelStore::publish(const ModelMeta& meta,
                                                     std::string_view blob) {
  std::lock_guard lock(mutex_);
  if (!failure_.empty()) return store_fail(failure_kind_, failure_);
  auto it = models_.find(meta.version);
  if (it != models_.end()) {
    const ModelMeta& have = it->second.first;
    return have.size_bytes == meta.size_bytes && have.crc32 == meta.crc32
               ? PublishStatus::kAlreadyPublished
               : PublishStatus::kConflict;
  }
  models_.emplace(meta.version, std::make_pair(meta, std::string(blob)));
  return PublishStatus::kPublished;
}

StoreResult<std::optional<ModelMeta>> MemoryModelStore::latest() {
  std::lock_guard lock(mutex_);
  if (!failure_.empty()) return store_fail(failure_kind_, failure_);
  if (models_.empty()) return std::optional<ModelMeta>();
  return std::optional<ModelMeta>(models_.rbegin()->second.first);
}

StoreResult<std::optional<ModelMeta>> MemoryModelStore::info(std::uint64_t version) {
  std::lock_guard lock(mutex_);
  if (!failure_.empty()) return store_fail(failure_kind_, failure_);
  auto it = models_.find(version);
  if (it == models_.end()) return std::optional<ModelMeta>();
  return std::optional<ModelMeta>(it->second.first);
}

StoreResult<std::vector<ModelMeta>> MemoryModelStore::versions_after(std::uint64_t version,
                                                                     std::size_t limit) {
  std::lock_guard lock(mutex_);
  if (!failure_.empty()) return store_fail(failure_kind_, failure_);
  std::vector<ModelMeta> out;
  for (auto it = models_.upper_bound(version); it != models_.end() && out.size() < limit; ++it) {
    out.push_back(it->second.first);
  }
  return out;
}

StoreResult<std::optional<std::string>> MemoryModelStore::read(std::uint64_t version) {
  std::lock_guard lock(mutex_);
  if (!failure_.empty()) return store_fail(failure_kind_, failure_);
  auto it = models_.find(version);
  if (it == models_.end()) return std::optional<std::string>();
  return std::optional<std::string>(it->second.second);
}

StoreResult<std::optional<ModelMeta>> MemoryModelStore::best() {
  std::lock_guard lock(mutex_);
  if (!failure_.empty()) return store_fail(failure_kind_, failure_);
  auto it = models_.find(best_);
  if (best_ == 0 || it == models_.end()) return std::optional<ModelMeta>();
  return std::optional<ModelMeta>(it->second.first);
}

Result<bool> MemoryModelStore::set_best(std::uint64_t version) {
  std::lock_guard lock(mutex_);
  if (!failure_.empty()) return fail(failure_);
  if (models_.find(version) == models_.end()) return false;
  best_ = version;
  return true;
}

void MemoryModelStore::set_failure(std::string message, StoreErrorKind kind) {
  std::lock_guard lock(mutex_);
  failure_ = std::move(message);
  failure_kind_ = kind;
}

Result<bool> MemoryModelStore::lease(std::uint64_t version, std::chrono::milliseconds ttl) {
  std::lock_guard lock(mutex_);
  if (!failure_.empty()) return fail(failure_);
  if (models_.find(version) == models_.end()) {
    leases_.erase(version);
    return false;
  }
  if (ttl.count() <= 0)
    leases_.erase(version);
  else
    leases_[version] = std::chrono::steady_clock::now() + ttl;
  return true;
}

Result<std::vector<std::uint64_t>> MemoryModelStore::prune(std::size_t keep) {
  std::lock_guard lock(mutex_);
  if (!failure_.empty()) return fail(failure_);
  std::vector<std::uint64_t> pruned;
  if (keep == 0) return pruned;
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(leases_, [&](const auto& lease) {
    return lease.second <= now || models_.find(lease.first) == models_.end();
  });
  if (models_.size() <= keep) return pruned;
  std::size_t older = models_.size() - keep;  // the versions before the newest `keep`
  for (auto it = models_.begin(); older > 0; --older) {
    if (it->first == best_ || leases_.contains(it->first)) {
      ++it;
      continue;
    }
    pruned.push_back(it->first);
    it = models_.erase(it);
  }
  return pruned;
}

}  // namespace chessrl::replay

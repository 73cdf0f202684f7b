// In-memory ReplayStore and ModelStore with the same semantics as the Redis
// ones (window, eviction, idempotence, uniform sampling, latest/best), for
// unit tests of everything above a store. Thread-safe (one mutex each).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_set>

#include "chessrl/replay/model_store.h"
#include "chessrl/replay/replay_store.h"

namespace chessrl::replay {

class MemoryReplayStore final : public ReplayStore {
 public:
  explicit MemoryReplayStore(std::uint64_t capacity_positions);

  Result<std::vector<PushResult>> push(std::span<const StoredGame> games) override;
  StoreResult<SampledPositions> sample(std::size_t count, std::uint64_t seed) override;
  Result<WindowStats> stats() override;

  // Makes every later call fail with `message` (empty: work again), to test
  // callers' handling of an unreachable store; sample() fails with `kind`.
  void set_failure(std::string message, StoreErrorKind kind = StoreErrorKind::kUnavailable);

 private:
  struct Game {
    std::string id;
    std::uint64_t first = 0;  // sequence number of its first position
    std::size_t count = 0;
  };
  std::mutex mutex_;
  std::uint64_t capacity_;
  std::deque<Game> window_;
  std::deque<std::string> positions_;  // sequence numbers first_seq_ ..
  std::uint64_t first_seq_ = 0;
  std::unordered_set<std::string> ids_;  // of the window's games and evicted_ids_
  std::deque<std::string> evicted_ids_;  // oldest first, at most window_.size()
  std::uint64_t games_total_ = 0;
  std::uint64_t positions_total_ = 0;
  std::string failure_;
  StoreErrorKind failure_kind_ = StoreErrorKind::kUnavailable;
};

class MemoryModelStore final : public ModelStore {
 public:
  StoreResult<PublishStatus> publish(const ModelMeta& meta, std::string_view blob) override;
  StoreResult<std::optional<ModelMeta>> latest() override;
  StoreResult<std::optional<ModelMeta>> info(std::uint64_t version) override;
  StoreResult<std::optional<std::string>> read(std::uint64_t version) override;
  StoreResult<std::vector<ModelMeta>> versions_after(std::uint64_t version,
                                                     std::size_t limit) override;
  StoreResult<std::optional<ModelMeta>> best() override;
  Result<bool> set_best(std::uint64_t version) override;
  Result<bool> lease(std::uint64_t version, std::chrono::milliseconds ttl) override;
  Result<std::vector<std::uint64_t>> prune(std::size_t keep) override;

  // As MemoryReplayStore's; every StoreResult call fails with `kind`.
  void set_failure(std::string message, StoreErrorKind kind = StoreErrorKind::kUnavailable);

 private:
  std::mutex mutex_;
  std::map<std::uint64_t, std::pair<ModelMeta, std::string>> models_;
  std::uint64_t best_ = 0;
  std::map<std::uint64_t, std::chrono::steady_clock::time_point> leases_;  // version -> end
  std::string failure_;
  StoreErrorKind failure_kind_ = StoreErrorKind::kUnavailable;
};

}  // namespace chessrl::replay

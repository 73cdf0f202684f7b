// ModelStore: the model registry's storage: versioned checkpoint blobs with
// their metadata, a `latest` pointer (the newest version published) and a
// `best` pointer (moved by the evaluator). Implemented by RedisReplayStore and
// MemoryModelStore. Thread-safe; failures as in ReplayStore, with a kind
// (store_error.h): a version whose stored data is damaged is kDataLoss.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chessrl/core/result.h"
#include "chessrl/replay/store_error.h"

namespace chessrl::replay {

struct ModelMeta {
  std::uint64_t version = 0;  // > 0
  std::uint64_t step = 0;
  std::uint64_t size_bytes = 0;
  std::uint32_t crc32 = 0;  // zlib crc32 of the blob
  std::int64_t created_unix_ms = 0;
  std::map<std::string, std::string> metadata;
  bool operator==(const ModelMeta&) const = default;
};

enum class PublishStatus : std::uint8_t {
  kPublished,         // stored; `latest` moved to it if it is the newest
  kAlreadyPublished,  // this version exists with the same size and crc32: nothing done
  kConflict,          // this version exists with different contents: nothing done
};

class ModelStore {
 public:
  virtual ~ModelStore() = default;

  // Stores `blob` as `meta.version` (size_bytes and crc32 must describe it;
  // the caller checks). Readers never see a half-written version.
  virtual StoreResult<PublishStatus> publish(const ModelMeta& meta, std::string_view blob) = 0;
  // nullopt while nothing is published / the version does not exist.
  virtual StoreResult<std::optional<ModelMeta>> latest() = 0;
  virtual StoreResult<std::optional<ModelMeta>> info(std::uint64_t version) = 0;
  virtual StoreResult<std::optional<std::string>> read(std::uint64_t version) = 0;
  // Up to `limit` versions newer than `version`, oldest first.
  virtual StoreResult<std::vector<ModelMeta>> versions_after(std::uint64_t version,
                                                        std::size_t limit) = 0;
  // nullopt while `best` was never set.
  virtual StoreResult<std::optional<ModelMeta>> best() = 0;
  // Moves `best` to `version`; returns false (nothing changed) when that
  // version does not exist.
  virtual Result<bool> set_best(std::uint64_t version) = 0;
  // Holds `version` back from prune() until `ttl` from now (replacing the
  // expiry of a lease it already has, so asking again renews it); a ttl of 0
  // ends the lease. Returns false (nothing changed) when that version does not
  // exist. The evaluator leases the candidate it gates, so a trainer that
  // publishes faster than a match lasts cannot prune it away mid-match.
  virtual Result<bool> lease(std::uint64_t version, std::chrono::milliseconds ttl) = 0;
  // Deletes every version except the newest `keep`, the best and those whose
  // lease has not expired (0: keeps all) and returns the deleted versions,
  // oldest first. Forgets expired leases and those of versions gone. Atomic: a version is
  // there whole or gone; a reader that raced the deletion finds it absent.
  virtual Result<std::vector<std::uint64_t>> prune(std::size_t keep) = 0;
};

}  // namespace chessrl::replay

// The model registry's download side in one chessrl-replay process:
//
// ModelBlobCache: recent versions' blobs in memory, bounded by bytes. Each
// version is read from the store once: concurrent requests for a version
// that is being read wait for that one read (single flight), and a blob
// still held by a download is found again after it left the cache. Versions
// never change once published, so an entry never goes stale; a version
// pruned from the store stays served while it is cached. A version larger
// than the bound is read and streamed without being kept.
//
// DownloadQueue: at most `slots` GetModel streams send at once; the others
// wait in arrival order until a slot frees, or until their deadline passes or
// their client goes away, instead of being refused.
//
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <grpcpp/support/status.h>

#include "chessrl/metrics/registry.h"
#include "chessrl/replay/model_store.h"

namespace chessrl::replay_service {

// One version's metadata and bytes; the bytes are shared by every reader.
struct ModelBlob {
  replay::ModelMeta meta;
  std::shared_ptr<const std::string> bytes;
};

// Where the cache reports itself (any may be null).
struct ModelCacheMetrics {
  metrics::Gauge* bytes = nullptr;     // bytes held
  metrics::Gauge* versions = nullptr;  // versions held
  metrics::Counter* hits = nullptr;    // requests answered from memory (or a read in flight)
  metrics::Counter* reads = nullptr;   // blobs read from the store
};

class ModelBlobCache {
 public:
  ModelBlobCache(replay::ModelStore& store, std::uint64_t max_bytes, ModelCacheMetrics metrics = {});

  // `version`'s blob: from memory, or read from the store (with its metadata
  // from `meta` when the caller knows it, else from the store). nullopt: no
  // such version. A failed read is not remembered: the next request tries again.
  replay::StoreResult<std::optional<ModelBlob>> get(std::uint64_t version,
                                                    const replay::ModelMeta* meta = nullptr);
  // The cached entry's metadata, if `version` is held (no store call).
  std::optional<replay::ModelMeta> cached_meta(std::uint64_t version) const;

  std::uint64_t bytes() const;
  std::size_t versions() const;
  std::uint64_t store_reads() const;  // blobs read from the store so far
  std::uint64_t max_bytes() const { return max_bytes_; }

 private:
  struct Flight {
    bool done = false;
    std::optional<replay::StoreResult<std::optional<ModelBlob>>> result;
  };
  struct Entry {
    ModelBlob blob;
    std::uint64_t used = 0;  // last use, by tick
  };
  replay::StoreResult<std::optional<ModelBlob>> load(std::uint64_t version,
                                                     const replay::ModelMeta* meta);
  void keep(const ModelBlob& blob);  // under mutex_
  void report();                     // under mutex_
  replay::ModelStore& store_;
  const std::uint64_t max_bytes_;
  ModelCacheMetrics metrics_;
  mutable std::mutex mutex_;
  std::condition_variable loaded_;
  std::map<std::uint64_t, Entry> entries_;                     // guarded by mutex_
  std::map<std::uint64_t, std::shared_ptr<Flight>> flights_;   // guarded by mutex_
  // Blobs handed out, still alive in some download (found again, not re-read).
  std::map<std::uint64_t, std::pair<replay::ModelMeta, std::weak_ptr<const std::string>>> live_;
  std::uint64_t bytes_ = 0;  // guarded by mutex_
  std::uint64_t tick_ = 0;   // guarded by mutex_
  std::uint64_t reads_ = 0;  // guarded by mutex_
};

class DownloadQueue {
 public:
  // `in_flight` and `waiting` (may be null) follow the slots taken and the callers waiting.
  DownloadQueue(std::uint32_t slots, metrics::Gauge* in_flight = nullptr,
                metrics::Gauge* waiting = nullptr);

  // Takes a slot, waiting behind earlier callers while all are taken. OK:
  // the caller holds a slot and must leave(). DEADLINE_EXCEEDED when
  // `deadline` passes first, CANCELLED when `cancelled()` says so first
  // (asked every `check` while waiting); the message starts with `what`.
  grpc::Status enter(std::chrono::system_clock::time_point deadline,
                     const std::function<bool()>& cancelled, const char* what,
                     std::chrono::milliseconds check = std::chrono::milliseconds(100));
  void leave();

  std::uint32_t slots() const { return slots_; }
  std::uint32_t in_flight() const;
  std::size_t waiting() const;

 private:
  struct Waiter {
    bool granted = false;
  };
  void report();  // under mutex_
  const std::uint32_t slots_;
  metrics::Gauge* in_flight_gauge_;
  metrics::Gauge* waiting_gauge_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::uint32_t in_flight_ = 0;  // guarded by mutex_
  std::list<Waiter*> queue_;     // guarded by mutex_: oldest first
};

}  // namespace chessrl::replay_service

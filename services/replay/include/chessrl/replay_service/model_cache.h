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
// wait in arrival order, holding no thread, until a slot frees. A waiter
// whose deadline would pass before its turn and its own transfer (estimated
// from recent downloads' time per byte) is refused instead of waiting in
// vain (docs/replay.md, "Model distribution").
//
// TaskPool: a few threads of the replay process's own for the download
// side's blocking work (store calls, the cache's read), so gRPC's callback
// threads never wait on Redis; tasks can be put off to a given time.
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
#include <thread>
#include <vector>

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
  // `version`'s blob if memory holds it (no store call, never waits).
  std::optional<ModelBlob> peek(std::uint64_t version);
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

// What DownloadQueue::enter() answers.
struct QueueTurn {
  enum class Kind { kGranted, kWaiting, kRefused };
  Kind kind = Kind::kGranted;
  std::uint64_t ticket = 0;          // kWaiting: for withdraw()
  std::chrono::milliseconds wait{0};  // kRefused: the estimated wait for a slot
  std::size_t ahead = 0;             // callers waiting ahead of it when it came
};

class DownloadQueue {
 public:
  // Told once to a caller that waited: granted (it holds a slot and must
  // leave()), or refused (it waits no more; `wait` is the estimate that its
  // deadline would not allow). Called without the queue's lock, on the thread
  // of the leave() that decided it.
  using OnTurn = std::function<void(bool granted, std::chrono::milliseconds wait)>;

  // `in_flight` and `waiting` (may be null) follow the slots taken and the callers waiting.
  DownloadQueue(std::uint32_t slots, metrics::Gauge* in_flight = nullptr,
                metrics::Gauge* waiting = nullptr);

  // A caller of `bytes` (0: unknown, the recent mean is assumed) whose call
  // ends at `deadline`: a slot at once when one is free and nobody waits;
  // refused when the estimated wait and its own transfer end past `deadline`;
  // else it waits and `on_turn` tells it later.
  QueueTurn enter(std::uint64_t bytes, std::chrono::system_clock::time_point deadline,
                  OnTurn on_turn);
  // Takes a waiting caller out (its client left). true: it was waiting and
  // on_turn will not be called; false: its turn was already decided.
  bool withdraw(std::uint64_t ticket);
  // Frees a slot (it passes to the oldest waiter). A download sent in full
  // (`completed`) teaches the estimate its time per byte. Waiters that can
  // no longer be served before their deadline are refused.
  void leave(std::uint64_t bytes, std::chrono::steady_clock::duration took, bool completed);
  // A newcomer's estimated wait for a slot; nullopt before any download
  // finished (nothing to estimate from).
  std::optional<std::chrono::milliseconds> estimate_wait() const;
  // The estimated time to send `bytes` in one slot (nullopt: no estimate yet).
  std::optional<std::chrono::milliseconds> estimate_transfer(std::uint64_t bytes) const;

  std::uint32_t slots() const { return slots_; }
  std::uint32_t in_flight() const;
  std::size_t waiting() const;

 private:
  struct Waiter {
    std::uint64_t ticket;
    std::uint64_t bytes;
    std::chrono::system_clock::time_point deadline;
    OnTurn on_turn;
    bool judged;  // let in with an estimate (else none was known yet)
  };
  // Under mutex_: the wait for a slot with `bytes_ahead` queued before, and
  // whether a caller of `bytes` could then be sent before `deadline`.
  std::optional<double> wait_seconds(std::uint64_t bytes_ahead) const;
  // `share`: of the time left, how much the estimate may take (below 1 when
  // a caller is first judged, so that one let in is not refused later as
  // the estimate wavers).
  bool fits(std::uint64_t bytes_ahead, std::uint64_t bytes,
            std::chrono::system_clock::time_point deadline,
            std::chrono::system_clock::time_point now, double share, double* wait) const;
  std::uint64_t sized(std::uint64_t bytes) const;  // 0 -> the mean
  void report();  // under mutex_
  const std::uint32_t slots_;
  metrics::Gauge* in_flight_gauge_;
  metrics::Gauge* waiting_gauge_;
  mutable std::mutex mutex_;
  std::uint32_t in_flight_ = 0;          // guarded by mutex_
  std::uint64_t in_flight_bytes_ = 0;    // guarded by mutex_
  std::list<Waiter> queue_;              // guarded by mutex_: oldest first
  std::uint64_t queued_bytes_ = 0;       // guarded by mutex_
  std::uint64_t next_ticket_ = 1;        // guarded by mutex_
  // guarded by mutex_: the time a slot takes per byte, the mean of the first
  // downloads then a moving average; 0 = not known yet (fewer than
  // estimate_after() downloads finished).
  double seconds_per_byte_ = 0;
  std::uint64_t completed_ = 0;      // guarded by mutex_: downloads sent in full
  double first_seconds_ = 0;         // guarded by mutex_: their time, until the estimate is known
  double first_bytes_ = 0;           // guarded by mutex_: and their bytes
  double mean_bytes_ = 0;                // guarded by mutex_: EWMA of sizes entered
};

class TaskPool {
 public:
  explicit TaskPool(int threads);
  ~TaskPool();  // stops: tasks not yet run are dropped
  void post(std::function<void()> task);
  void post_at(std::chrono::steady_clock::time_point when, std::function<void()> task);

 private:
  void run();
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;                                                      // guarded
  std::multimap<std::chrono::steady_clock::time_point, std::function<void()>> tasks_;  // guarded
  std::vector<std::thread> threads_;
};

}  // namespace chessrl::replay_service

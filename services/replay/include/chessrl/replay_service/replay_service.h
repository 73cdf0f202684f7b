// The gRPC services of chessrl-replay over a ReplayStore and a ModelStore:
// ReplayServiceImpl (PushGames, Sample, Stats) and ModelRegistryImpl. Every
// handler turns every failure into a grpc::Status: a store failure by its
// kind (unreachable: UNAVAILABLE, retry; damaged data: DATA_LOSS), bad input
// INVALID_ARGUMENT; no exception escapes (docs/replay.md, "Status codes").
// Thread-safe: gRPC calls the handlers from many threads.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "chessrl/metrics/registry.h"
#include "chessrl/record/validation.h"
#include "chessrl/replay/model_store.h"
#include "chessrl/replay/replay_store.h"
#include "chessrl/replay_service/model_cache.h"
#include "chessrl/replay_service/model_hub.h"
#include "chessrl/replay_service/producer_gate.h"
#include "chessrl/rpc/auth.h"
#include "chessrl/rpc/clients.h"
#include "chessrl/v1/models.grpc.pb.h"
#include "chessrl/v1/replay.grpc.pb.h"

namespace chessrl::replay_service {

struct ReplayServiceOptions {
  record::ValidationLimits limits;
  std::uint32_t max_sample = 16384;    // positions per Sample call
  std::uint32_t max_push_games = 256;  // games per PushGames call
  // Training positions per PushGames call of more than one game (one game is
  // bounded by limits.max_plies): self-play's default push, 32 games of at most
  // 200 plies with a target on a quarter of the moves, holds about 1,600, and
  // at most 6,400 with a target on every move. The chart's window of 50,000
  // takes at least 7 such calls to replace, not one.
  std::uint32_t max_push_positions = 8192;
  // Admission: PushGames calls in the handler at once, and the bytes of their
  // requests (ByteSizeLong) together. Past either, a call is answered
  // UNAVAILABLE at once, naming the flag (--max-push-calls, --max-push-bytes),
  // and counted in chessrl_replay_pushes_refused_total{reason}; self-play keeps
  // its games and retries with jittered backoff. A call alone over
  // max_push_bytes is refused RESOURCE_EXHAUSTED (the pusher splits it). 0: no
  // cap. 16 calls: twice a Redis pool of 8 connections (more only wait for a
  // connection, holding their requests); 1,000 producers at 3x what Redis
  // takes peaked replay at 329 MiB with 16, 439 MiB with 64, 959 MiB with no
  // cap (docs/replay.md, "Admission"). 32 MiB: 16 of self-play's largest
  // default pushes (1.6 MB) fit; four of the largest messages (8 MiB).
  std::uint32_t max_push_calls = 16;
  std::uint64_t max_push_bytes = 32ull << 20;
  ProducerOptions producers;  // quarantine, rate limit, per-producer series
};

// The service's own series in a metrics registry (names in docs/metrics.md).
struct ReplayMetrics {
  explicit ReplayMetrics(metrics::Registry& registry);
  metrics::Counter& games_stored;
  metrics::Counter& games_duplicate;
  metrics::Counter& positions_stored;
  metrics::Counter& positions_sampled;
  metrics::Counter& store_errors;
  metrics::Counter& models_pruned;
  metrics::Gauge& window_positions;
  metrics::Gauge& window_games;
  metrics::Gauge& model_version;
  metrics::Gauge& model_watchers;             // WatchModels streams open
  metrics::Gauge& model_downloads_in_flight;  // GetModel streams sending
  metrics::Gauge& model_downloads_waiting;    // GetModel calls waiting for a slot
  metrics::Gauge& model_cache_bytes;          // blobs held by the model cache
  metrics::Gauge& model_cache_versions;       // versions held by the model cache
  metrics::Counter& model_cache_hits;         // blob requests answered from memory
  metrics::Counter& model_blob_reads;         // model blobs read from the store
  // GetModel calls answered UNAVAILABLE: their deadline would pass before their turn.
  metrics::Counter& model_downloads_deferred;
  metrics::Gauge& pushes_in_flight;      // PushGames calls admitted and not yet answered
  metrics::Gauge& push_bytes_in_flight;  // their request bytes
  // PushGames calls refused at the door: "busy_calls" (--max-push-calls),
  // "busy_bytes" (--max-push-bytes) or "too_large" (one call over --max-push-bytes).
  metrics::Counter& pushes_refused(std::string_view reason);
  metrics::Gauge& store_up;
  metrics::Gauge& store_memory_used;
  metrics::Gauge& store_memory_max;
  metrics::Gauge& store_aof_enabled;
  metrics::Gauge& store_changes_since_save;
  metrics::Gauge& store_last_save;
  metrics::Gauge& store_persistence_ok(const std::string& kind);  // "aof" or "rdb"
  metrics::Counter& rejected(record::RejectReason reason);
  // One finished call: counted by method and status code name; its duration
  // observed unless `timed` is false (a WatchModels stream lasts as long as
  // its watcher).
  void record_call(const char* method, grpc::StatusCode code, double seconds, bool timed);
  // A call the token gate refused before its message was read: counted as
  // record_call does, a method this service does not have as "unknown" (the
  // name comes from the client: any text would make a new series).
  void record_refusal(std::string_view method, grpc::StatusCode code);
  // The server's INFO into the store_* gauges.
  void set_store_info(const replay::StoreServerInfo& info);
  metrics::Registry& registry() { return registry_; }

 private:
  metrics::Registry& registry_;
  std::map<std::string, metrics::Histogram*, std::less<>> durations_;  // by method, made once
};

class ReplayServiceImpl final : public v1::ReplayService::Service {
 public:
  // `auth` (kept by reference: it must outlive the service) is checked first in every call.
  ReplayServiceImpl(replay::ReplayStore& store, ReplayMetrics& metrics,
                    ReplayServiceOptions options, const rpc::ServerAuth& auth);

  grpc::Status PushGames(grpc::ServerContext* context, const v1::PushGamesRequest* request,
                         v1::PushGamesReply* reply) override;
  grpc::Status Sample(grpc::ServerContext* context, const v1::SampleRequest* request,
                      v1::SampleReply* reply) override;
  grpc::Status Stats(grpc::ServerContext* context, const v1::StatsRequest* request,
                     v1::StatsReply* reply) override;

 private:
  grpc::Status push(const v1::PushGamesRequest& request, v1::PushGamesReply& reply);
  // Takes a place for a call of `bytes` among the pushes in flight, or says
  // why not (UNAVAILABLE: busy; RESOURCE_EXHAUSTED: the call alone is too big).
  grpc::Status enter_push(std::uint64_t bytes);
  void leave_push(std::uint64_t bytes);
  replay::ReplayStore& store_;
  ReplayMetrics& metrics_;
  ReplayServiceOptions options_;
  const rpc::ServerAuth& auth_;
  ProducerGate producers_;
  std::atomic<std::uint64_t> sample_calls_{0};
  std::uint64_t seed_base_;
  std::mutex push_mutex_;
  std::uint32_t pushes_in_flight_ = 0;      // guarded by push_mutex_
  std::uint64_t push_bytes_in_flight_ = 0;  // guarded by push_mutex_
};

struct ModelRegistryOptions {
  // A publish holds the model twice (assembled, then in the Redis command).
  // 64 MiB is above any network trained here (weights only: 6x64 publishes
  // 3.3 MB, measured; 10x128, the GPU values' net, about 14 MB by parameter
  // count; 20x256 about 100 MB needs this and the pod's memory raised).
  std::uint64_t max_model_bytes = 64ull << 20;
  // Recent versions' blobs kept in memory, by bytes (ModelBlobCache): each
  // version is read from Redis once per process, however many download it.
  // 64 MiB holds the newest versions a fleet asks for (the latest, the one
  // before, the best and the evaluator's candidate) at 14 MB each, or 19 of
  // 3.3 MB; a version larger than this is streamed without being kept.
  std::uint64_t model_cache_bytes = 64ull << 20;
  // GetModel streams sending at once; the next ones wait in arrival order
  // (holding no thread) until a stream ends. One whose deadline would pass
  // before its turn and its transfer (estimated from recent downloads) is
  // answered UNAVAILABLE with the trailer `chessrl-retry-after-ms` shortly
  // before that deadline, instead of DEADLINE_EXCEEDED at it (none is refused
  // for being busy alone). A stream holds the chunk being written and gRPC's
  // copy of it, about 2 MiB: 32 hold about 64 MiB beside the cache
  // (docs/replay.md, "Model distribution").
  std::uint32_t max_model_downloads = 32;
  // WatchModels streams open at once (one per self-play pod and evaluator).
  // A stream holds no thread and a few KB (measured in docs/replay.md); the
  // next is answered RESOURCE_EXHAUSTED with the trailer
  // `chessrl-retry-elsewhere: 1`, so the client tries another replica.
  std::uint32_t max_watchers = 4096;
  std::uint32_t max_chunk_bytes = 4 << 20;  // PublishModel's data per message
  std::uint32_t chunk_bytes = 1 << 20;      // GetModel's data per message
  // How often the process asks the store for versions other processes
  // published (one call, whatever the number of watchers).
  int watch_poll_ms = 1000;
  // After each publish, every version but the newest keep_models, the best
  // and the leased (LeaseModel) is deleted (0: all are kept).
  std::uint32_t keep_models = 20;
};

// The trailing metadata of a refusal for capacity (the client should open its
// next stream on another replica, a new connection) and of a GetModel answered
// UNAVAILABLE because its deadline would pass before its turn in the download
// queue (the milliseconds after which a call with the same deadline would
// likely be served): one name for the server and the clients (rpc/clients.h).
using rpc::kRetryAfterMsKey;
using rpc::kRetryElsewhereKey;

class DownloadStream;

class ModelRegistryImpl final
    : public v1::ModelRegistry::WithCallbackMethod_GetModel<
          v1::ModelRegistry::WithCallbackMethod_WatchModels<v1::ModelRegistry::Service>> {
 public:
  // Starts the hub's polling thread and the download side's few worker
  // threads (stopped by the destructor).
  ModelRegistryImpl(replay::ModelStore& store, ReplayMetrics& metrics, ModelRegistryOptions options,
                    const rpc::ServerAuth& auth);
  ~ModelRegistryImpl() override;

  grpc::Status PublishModel(grpc::ServerContext* context,
                            grpc::ServerReader<v1::ModelChunk>* reader,
                            v1::ModelInfo* reply) override;
  // A callback stream (model_download.cpp): waiting for a slot it holds no
  // thread; its store calls run on the registry's worker threads.
  grpc::ServerWriteReactor<v1::ModelChunk>* GetModel(grpc::CallbackServerContext* context,
                                                     const v1::GetModelRequest* request) override;
  grpc::Status LatestModel(grpc::ServerContext* context, const v1::LatestModelRequest* request,
                           v1::ModelInfo* reply) override;
  // A callback stream (model_watch.cpp): it holds no thread while it waits.
  grpc::ServerWriteReactor<v1::ModelInfo>* WatchModels(
      grpc::CallbackServerContext* context, const v1::WatchModelsRequest* request) override;
  grpc::Status SetBest(grpc::ServerContext* context, const v1::SetBestRequest* request,
                       v1::ModelInfo* reply) override;
  grpc::Status BestModel(grpc::ServerContext* context, const v1::BestModelRequest* request,
                         v1::ModelInfo* reply) override;
  // In model_lease.cpp.
  grpc::Status LeaseModel(grpc::ServerContext* context, const v1::LeaseModelRequest* request,
                          v1::ModelInfo* reply) override;

  // PublishModel over grpc's stream interface: the override above calls it,
  // and tests drive it with grpc::testing's mock streams
  // (tests/services/replay_concurrency_test.cpp, run under ThreadSanitizer).
  grpc::Status publish_model(grpc::ServerContext& context,
                             grpc::ServerReaderInterface<v1::ModelChunk>& reader,
                             v1::ModelInfo& reply);

  // A version's metadata and bytes through the same cache as GetModel (one
  // store read per version per process; version 0: the latest). nullopt: no
  // such version. For the HTTP route; no token is checked here.
  using ModelBlob = ::chessrl::replay_service::ModelBlob;
  replay::StoreResult<std::optional<ModelBlob>> model_blob(std::uint64_t version);
  // The latest version as this process knows it (the hub's memory; the store
  // while the hub has never reached it). nullopt: none published.
  replay::StoreResult<std::optional<replay::ModelMeta>> latest();

  ModelHub& hub() { return *hub_; }
  const ModelBlobCache& cache() const { return *cache_; }
  const DownloadQueue& downloads() const { return *downloads_; }

  // Ends every WatchModels stream (UNAVAILABLE) and refuses new ones (for
  // shutdown: they would otherwise run forever).
  void stop_watchers();
  // Ends every GetModel stream waiting for a slot or sending (UNAVAILABLE,
  // a sending one after its chunk in flight) and refuses new ones.
  void stop_downloads();

 private:
  friend class WatchStream;
  friend class DownloadStream;
  grpc::Status publish(grpc::ServerContext& context,
                       grpc::ServerReaderInterface<v1::ModelChunk>& reader, v1::ModelInfo& reply);
  // A GetModel stream ended (model_download.cpp).
  void download_left(DownloadStream* stream);
  // Deletes the versions beyond options_.keep_models (logged, counted).
  void prune();
  // A WatchModels stream ended (model_watch.cpp).
  void watcher_left();
  replay::ModelStore& store_;
  ReplayMetrics& metrics_;
  ModelRegistryOptions options_;
  const rpc::ServerAuth& auth_;
  std::unique_ptr<ModelHub> hub_;
  std::unique_ptr<ModelBlobCache> cache_;
  std::unique_ptr<DownloadQueue> downloads_;
  std::mutex watch_mutex_;
  bool stopping_ = false;       // guarded by watch_mutex_
  std::uint32_t watchers_ = 0;  // guarded by watch_mutex_: WatchModels streams open
  std::mutex download_mutex_;
  bool downloads_stopping_ = false;  // guarded by download_mutex_
  // GetModel streams not yet done, guarded by download_mutex_.
  std::map<DownloadStream*, std::weak_ptr<DownloadStream>> download_streams_;
  // Last: its threads stop first, before what their tasks use.
  std::unique_ptr<TaskPool> pool_;
};

// ModelMeta <-> ModelInfo.
v1::ModelInfo to_proto(const replay::ModelMeta& meta);
replay::ModelMeta from_proto(const v1::ModelInfo& info);

}  // namespace chessrl::replay_service

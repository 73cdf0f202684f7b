#include "replay_service.h"

#include <chrono>
#include <cstdio>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "chessrl/core/splitmix64.h"

namespace chessrl::replay_service {
namespace {

using grpc::Status;
using grpc::StatusCode;

Status unavailable(const std::string& what, const std::string& error) {
  return Status(StatusCode::UNAVAILABLE, what + ": " + error);
}

// A store failure as the code its kind calls for (docs/replay.md, "Status
// codes"): only UNAVAILABLE tells a client that trying again may help.
template <class T>
Status store_error(const std::string& what, const replay::StoreResult<T>& result) {
  switch (result.kind()) {
    case replay::StoreErrorKind::kDataLoss:
      return Status(StatusCode::DATA_LOSS, what + ": " + result.error());
    case replay::StoreErrorKind::kInvalidArgument:
      return Status(StatusCode::INVALID_ARGUMENT, what + ": " + result.error());
    case replay::StoreErrorKind::kUnavailable: break;
  }
  return unavailable(what, result.error());
}

// Runs a handler body; an exception becomes INTERNAL instead of reaching gRPC.
template <class Body>
Status run_guarded(const char* rpc, Body&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return Status(StatusCode::INTERNAL, std::string(rpc) + ": " + e.what());
  } catch (...) {
    return Status(StatusCode::INTERNAL, std::string(rpc) + ": unknown error");
  }
}

// run_guarded, and the call counted and timed in `metrics`.
template <class Body>
Status guarded(ReplayMetrics& metrics, const char* rpc, Body&& body, bool timed = true) {
  const auto start = std::chrono::steady_clock::now();
  Status status = run_guarded(rpc, std::forward<Body>(body));
  metrics.record_call(
      rpc, status.error_code(),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), timed);
  return status;
}

// gRPC's name of a status code, as grpc-go and grpcurl print it.
const char* code_name(StatusCode code) {
  switch (code) {
    case StatusCode::OK: return "OK";
    case StatusCode::CANCELLED: return "CANCELLED";
    case StatusCode::UNKNOWN: return "UNKNOWN";
    case StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case StatusCode::NOT_FOUND: return "NOT_FOUND";
    case StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case StatusCode::ABORTED: return "ABORTED";
    case StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
    case StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case StatusCode::INTERNAL: return "INTERNAL";
    case StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case StatusCode::DATA_LOSS: return "DATA_LOSS";
    case StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    default: return "UNKNOWN";
  }
}

constexpr const char* kMethods[] = {"PushGames",    "Sample",   "Stats",
                                    "PublishModel", "GetModel", "LatestModel",
                                    "WatchModels",  "SetBest",  "BestModel"};
constexpr const char* kCallsHelp = "gRPC calls answered, by method and status code";
constexpr const char* kDurationHelp =
    "Seconds to answer a gRPC call, by method (WatchModels streams are not timed)";

std::vector<double> duration_buckets() { return metrics::exponential_buckets(0.0005, 2, 15); }

// Versions a WatchModels stream looks up at once; a watcher further behind
// skips to the newest.
constexpr std::size_t kWatchBatch = 64;

std::int64_t now_unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

ReplayMetrics::ReplayMetrics(metrics::Registry& registry)
    : games_stored(
          registry.counter("chessrl_replay_games_stored_total", "Games validated and stored")),
      games_duplicate(registry.counter("chessrl_replay_games_duplicate_total",
                                       "Pushed games whose id was already stored")),
      positions_stored(
          registry.counter("chessrl_replay_positions_stored_total", "Training positions stored")),
      positions_sampled(registry.counter("chessrl_replay_positions_sampled_total",
                                         "Training positions served by Sample")),
      store_errors(registry.counter("chessrl_replay_store_errors_total",
                                    "Store calls that failed (Redis unreachable)")),
      models_pruned(registry.counter("chessrl_replay_models_pruned_total",
                                     "Model versions deleted from the registry (--keep-models)")),
      window_positions(
          registry.gauge("chessrl_replay_positions", "Training positions in the replay window")),
      window_games(registry.gauge("chessrl_replay_games", "Games in the replay window")),
      model_version(registry.gauge("chessrl_model_version", "Latest published model version")),
      store_up(registry.gauge("chessrl_replay_store_up",
                              "1 when the last store health check succeeded, else 0")),
      store_memory_used(registry.gauge("chessrl_replay_store_memory_used_bytes",
                                       "Memory the store (Redis) uses (INFO used_memory)")),
      store_memory_max(registry.gauge("chessrl_replay_store_memory_max_bytes",
                                      "The store's memory limit (Redis maxmemory; 0: none)")),
      store_aof_enabled(registry.gauge("chessrl_replay_store_aof_enabled",
                                       "1 when Redis writes an append-only file")),
      store_changes_since_save(
          registry.gauge("chessrl_replay_store_changes_since_save",
                         "Writes to Redis since its last snapshot (rdb_changes_since_last_save)")),
      store_last_save(registry.gauge("chessrl_replay_store_last_save_timestamp_seconds",
                                     "Unix time of Redis's last snapshot (rdb_last_save_time)")),
      registry_(registry) {
  for (const auto reason : replay::kAllRejectReasons) rejected(reason);  // export zeros
  store_persistence_ok("aof");
  store_persistence_ok("rdb");
  for (const char* method : kMethods) {
    registry_.counter("chessrl_replay_rpc_requests_total", kCallsHelp,
                      {{"method", method}, {"code", "OK"}});
    durations_[method] = &registry_.histogram("chessrl_replay_rpc_duration_seconds", kDurationHelp,
                                              duration_buckets(), {{"method", method}});
  }
}

metrics::Gauge& ReplayMetrics::store_persistence_ok(const std::string& kind) {
  return registry_.gauge("chessrl_replay_store_persistence_ok",
                         "1 when Redis's last write of this kind (aof: append-only file, rdb: "
                         "snapshot) succeeded, else 0",
                         {{"kind", kind}});
}

void ReplayMetrics::record_call(const char* method, grpc::StatusCode code, double seconds,
                                bool timed) {
  registry_
      .counter("chessrl_replay_rpc_requests_total", kCallsHelp,
               {{"method", method}, {"code", code_name(code)}})
      .inc();
  if (!timed) return;
  if (const auto it = durations_.find(std::string_view(method)); it != durations_.end())
    it->second->observe(seconds);
}

void ReplayMetrics::set_store_info(const replay::StoreServerInfo& info) {
  store_memory_used.set(static_cast<double>(info.used_memory_bytes));
  store_memory_max.set(static_cast<double>(info.max_memory_bytes));
  store_aof_enabled.set(info.aof_enabled ? 1.0 : 0.0);
  store_persistence_ok("aof").set(info.aof_ok ? 1.0 : 0.0);
  store_persistence_ok("rdb").set(info.rdb_ok ? 1.0 : 0.0);
  store_changes_since_save.set(static_cast<double>(info.changes_since_save));
  store_last_save.set(static_cast<double>(info.last_save_unix));
}

metrics::Counter& ReplayMetrics::rejected(replay::RejectReason reason) {
  return registry_.counter("chessrl_replay_games_rejected_total",
                           "Pushed games refused by validation, by reason",
                           {{"reason", std::string(replay::reason_label(reason))}});
}

// ---------------------------------------------------------------- replay

ReplayServiceImpl::ReplayServiceImpl(replay::ReplayStore& store, ReplayMetrics& metrics,
                                     ReplayServiceOptions options, const rpc::ServerAuth& auth)
    : store_(store),
      metrics_(metrics),
      options_(options),
      auth_(auth),
      seed_base_(std::random_device{}()) {}

Status ReplayServiceImpl::PushGames(grpc::ServerContext* context,
                                    const v1::PushGamesRequest* request,
                                    v1::PushGamesReply* reply) {
  return guarded(metrics_, "PushGames", [&] {
    if (auto denied = auth_.check(*context, rpc::Action::kPushGames, "PushGames"); !denied.ok())
      return denied;
    return push(*request, *reply);
  });
}

Status ReplayServiceImpl::push(const v1::PushGamesRequest& request, v1::PushGamesReply& reply) {
  if (request.games_size() > static_cast<int>(options_.max_push_games)) {
    return Status(StatusCode::RESOURCE_EXHAUSTED,
                  "PushGames: " + std::to_string(request.games_size()) +
                      " games in one call; at most " + std::to_string(options_.max_push_games) +
                      " (--max-push-games); nothing was stored");
  }
  std::vector<replay::StoredGame> valid;
  std::vector<int> valid_index;  // request index of each valid game
  std::vector<std::size_t> rejected;
  reply.mutable_results()->Reserve(request.games_size());
  for (int i = 0; i < request.games_size(); ++i) {
    const v1::Game& game = request.games(i);
    v1::PushResult* result = reply.add_results();
    result->set_id(game.id());
    replay::Validation validation = replay::validate_game(game, options_.limits);
    if (auto* rejection = std::get_if<replay::Rejection>(&validation)) {
      result->set_status(v1::REJECTED);
      result->set_reason(std::string(replay::reason_label(rejection->reason)));
      result->set_detail(std::move(rejection->detail));
      rejected.push_back(static_cast<std::size_t>(rejection->reason));
      continue;
    }
    valid.push_back(std::get<replay::StoredGame>(std::move(validation)));
    valid_index.push_back(i);
  }
  // Rejections are counted once per push, even when the store then fails
  // and the client retries: a retried bad game is counted again, as it should.
  for (const std::size_t reason : rejected) {
    metrics_.rejected(static_cast<replay::RejectReason>(reason)).inc();
  }
  if (valid.empty()) return Status::OK;
  auto statuses = store_.push(valid);
  if (!statuses.ok()) {
    metrics_.store_errors.inc();
    return unavailable("PushGames: the store did not take the games (none acknowledged)",
                       statuses.error());
  }
  for (std::size_t k = 0; k < valid.size(); ++k) {
    v1::PushResult* result = reply.mutable_results(valid_index[k]);
    const replay::PushResult& pushed = (*statuses)[k];
    if (pushed == replay::PushStatus::kStored) {
      result->set_status(v1::STORED);
      metrics_.games_stored.inc();
      metrics_.positions_stored.inc(static_cast<double>(valid[k].positions.size()));
    } else if (pushed == replay::PushStatus::kDuplicate) {
      result->set_status(v1::DUPLICATE);
      metrics_.games_duplicate.inc();
    } else {  // not stored, while others of the batch may be: the client resends it
      result->set_status(v1::FAILED);
      result->set_reason("store_error");
      result->set_detail(pushed.error);
      metrics_.store_errors.inc();
    }
  }
  return Status::OK;
}

Status ReplayServiceImpl::Sample(grpc::ServerContext* context, const v1::SampleRequest* request,
                                 v1::SampleReply* reply) {
  return guarded(metrics_, "Sample", [&] {
    if (auto denied = auth_.check(*context, rpc::Action::kSample, "Sample"); !denied.ok())
      return denied;
    const std::uint32_t count = request->count();
    if (count == 0 || count > options_.max_sample) {
      return Status(StatusCode::INVALID_ARGUMENT, "Sample: count must be 1.." +
                                                      std::to_string(options_.max_sample) +
                                                      ", got " + std::to_string(count));
    }
    const std::uint64_t seed = mix64(seed_base_ ^ mix64(++sample_calls_));
    auto sampled = store_.sample(count, seed);
    if (!sampled.ok()) {
      metrics_.store_errors.inc();
      return store_error("Sample", sampled);
    }
    reply->set_window_positions(sampled->window_positions);
    reply->mutable_positions()->Reserve(static_cast<int>(sampled->positions.size()));
    for (const std::string& blob : sampled->positions) {
      if (!reply->add_positions()->ParseFromString(blob)) {
        return Status(StatusCode::DATA_LOSS, "Sample: a stored position does not parse");
      }
    }
    metrics_.positions_sampled.inc(static_cast<double>(sampled->positions.size()));
    return Status::OK;
  });
}

Status ReplayServiceImpl::Stats(grpc::ServerContext* context, const v1::StatsRequest*,
                                v1::StatsReply* reply) {
  return guarded(metrics_, "Stats", [&] {
    if (auto denied = auth_.check(*context, rpc::Action::kRead, "Stats"); !denied.ok())
      return denied;
    auto stats = store_.stats();
    if (!stats.ok()) {
      metrics_.store_errors.inc();
      return unavailable("Stats", stats.error());
    }
    reply->set_window_games(stats->games);
    reply->set_window_positions(stats->positions);
    reply->set_window_capacity(stats->capacity);
    reply->set_games_stored_total(stats->games_total);
    reply->set_positions_stored_total(stats->positions_total);
    reply->set_duplicates_total(static_cast<std::uint64_t>(metrics_.games_duplicate.value()));
    for (const auto reason : replay::kAllRejectReasons) {
      (*reply->mutable_rejected_total())[std::string(replay::reason_label(reason))] =
          static_cast<std::uint64_t>(metrics_.rejected(reason).value());
    }
    metrics_.window_positions.set(static_cast<double>(stats->positions));
    metrics_.window_games.set(static_cast<double>(stats->games));
    return Status::OK;
  });
}

// ---------------------------------------------------------------- models

v1::ModelInfo to_proto(const replay::ModelMeta& meta) {
  v1::ModelInfo info;
  info.set_version(meta.version);
  info.set_step(meta.step);
  info.set_size_bytes(meta.size_bytes);
  info.set_crc32(meta.crc32);
  info.set_created_unix_ms(meta.created_unix_ms);
  for (const auto& [key, value] : meta.metadata) (*info.mutable_metadata())[key] = value;
  return info;
}

replay::ModelMeta from_proto(const v1::ModelInfo& info) {
  replay::ModelMeta meta;
  meta.version = info.version();
  meta.step = info.step();
  meta.size_bytes = info.size_bytes();
  meta.crc32 = info.crc32();
  meta.created_unix_ms = info.created_unix_ms();
  for (const auto& [key, value] : info.metadata()) meta.metadata[key] = value;
  return meta;
}

ModelRegistryImpl::ModelRegistryImpl(replay::ModelStore& store, ReplayMetrics& metrics,
                                     ModelRegistryOptions options, const rpc::ServerAuth& auth)
    : store_(store), metrics_(metrics), options_(options), auth_(auth) {}

Status ModelRegistryImpl::PublishModel(grpc::ServerContext* context,
                                       grpc::ServerReader<v1::ModelChunk>* reader,
                                       v1::ModelInfo* reply) {
  return guarded(metrics_, "PublishModel", [&] {
    if (auto denied = auth_.check(*context, rpc::Action::kPublishModel, "PublishModel");
        !denied.ok())
      return denied;
    return publish(*context, *reader, *reply);
  });
}

Status ModelRegistryImpl::publish(grpc::ServerContext& context,
                                  grpc::ServerReader<v1::ModelChunk>& reader,
                                  v1::ModelInfo& reply) {
  v1::ModelChunk chunk;
  if (!reader.Read(&chunk)) {
    return Status(StatusCode::INVALID_ARGUMENT, "PublishModel: no chunks");
  }
  if (!chunk.has_info() || chunk.info().version() == 0) {
    return Status(StatusCode::INVALID_ARGUMENT,
                  "PublishModel: the first chunk must carry info with a version > 0");
  }
  replay::ModelMeta meta = from_proto(chunk.info());
  const std::string too_large = "PublishModel: the model is larger than --max-model-bytes (" +
                                std::to_string(options_.max_model_bytes) + ")";
  // Refused from the size the first chunk names, before the rest arrives.
  if (meta.size_bytes > options_.max_model_bytes) {
    return Status(StatusCode::RESOURCE_EXHAUSTED,
                  too_large + ": its info says " + std::to_string(meta.size_bytes) + " bytes");
  }
  const auto chunk_too_large = [&](const v1::ModelChunk& c) {
    return c.data().size() > options_.max_chunk_bytes;
  };
  const std::string chunk_limit = "PublishModel: a chunk is larger than " +
                                  std::to_string(options_.max_chunk_bytes) + " bytes";
  if (chunk_too_large(chunk)) return Status(StatusCode::RESOURCE_EXHAUSTED, chunk_limit);
  std::string blob = std::move(*chunk.mutable_data());
  while (reader.Read(&chunk)) {
    if (chunk.has_info()) {
      return Status(StatusCode::INVALID_ARGUMENT, "PublishModel: info is allowed only first");
    }
    if (chunk_too_large(chunk)) return Status(StatusCode::RESOURCE_EXHAUSTED, chunk_limit);
    if (blob.size() + chunk.data().size() > options_.max_model_bytes) {
      return Status(StatusCode::RESOURCE_EXHAUSTED, too_large);
    }
    blob += chunk.data();
  }
  // Read() also ends when the client cancels or goes away: what arrived may
  // be a part, so nothing is published unless the stream ended as the client
  // meant it to and the data is exactly what the info describes.
  if (context.IsCancelled()) {
    return Status(StatusCode::CANCELLED, "PublishModel: the client cancelled the upload of "
                                         "version " + std::to_string(meta.version) +
                                             "; nothing published");
  }
  if (blob.empty()) return Status(StatusCode::INVALID_ARGUMENT, "PublishModel: empty model");
  if (meta.size_bytes == 0) {
    return Status(StatusCode::INVALID_ARGUMENT,
                  "PublishModel: the first chunk's info must carry size_bytes (the model's "
                  "length); nothing published");
  }
  if (meta.size_bytes != blob.size()) {
    return Status(StatusCode::INVALID_ARGUMENT,
                  "PublishModel: info says " + std::to_string(meta.size_bytes) +
                      " bytes, received " + std::to_string(blob.size()) + "; nothing published");
  }
  // A crc32 of 0 is what a missing one reads as; a model whose CRC really is
  // 0 still matches.
  const std::uint32_t crc = rpc::blob_crc32(blob);
  if (meta.crc32 == 0 && crc != 0) {
    return Status(StatusCode::INVALID_ARGUMENT,
                  "PublishModel: the first chunk's info must carry crc32 (zlib's CRC-32 of the "
                  "model); nothing published");
  }
  if (meta.crc32 != crc) {
    return Status(StatusCode::DATA_LOSS,
                  "PublishModel: crc32 mismatch (the data was damaged); nothing published");
  }
  meta.created_unix_ms = now_unix_ms();
  auto status = store_.publish(meta, blob);
  if (!status.ok()) {
    metrics_.store_errors.inc();
    return store_error("PublishModel", status);
  }
  if (*status == replay::PublishStatus::kConflict) {
    return Status(StatusCode::ALREADY_EXISTS, "PublishModel: version " +
                                                  std::to_string(meta.version) +
                                                  " exists with different contents");
  }
  auto stored = store_.info(meta.version);
  if (!stored.ok() || !stored->has_value()) {
    return stored.ok() ? unavailable("PublishModel", "version vanished")
                       : store_error("PublishModel", stored);
  }
  reply = to_proto(**stored);
  if (*status == replay::PublishStatus::kPublished) prune();
  {
    std::lock_guard lock(mutex_);
    ++publishes_;
  }
  published_.notify_all();
  return Status::OK;
}

void ModelRegistryImpl::prune() {
  if (options_.keep_models == 0) return;
  auto pruned = store_.prune(options_.keep_models);
  if (!pruned.ok()) {  // the publish stands; the next one prunes again
    metrics_.store_errors.inc();
    std::fprintf(stderr, "chessrl-replay: pruning the model registry failed: %s\n",
                 pruned.error().c_str());
    return;
  }
  if (pruned->empty()) return;
  std::string versions;
  for (const std::uint64_t version : *pruned) {
    versions += (versions.empty() ? "" : ", ") + std::to_string(version);
  }
  metrics_.models_pruned.inc(static_cast<double>(pruned->size()));
  std::fprintf(stderr,
               "chessrl-replay: pruned model version%s %s (--keep-models %u: the newest %u and "
               "the best are kept)\n",
               pruned->size() == 1 ? "" : "s", versions.c_str(), options_.keep_models,
               options_.keep_models);
}

Status ModelRegistryImpl::GetModel(grpc::ServerContext* context, const v1::GetModelRequest* request,
                                   grpc::ServerWriter<v1::ModelChunk>* writer) {
  return guarded(metrics_, "GetModel", [&] {
    if (auto denied = auth_.check(*context, rpc::Action::kRead, "GetModel"); !denied.ok())
      return denied;
    return get(*request, *writer);
  });
}

Status ModelRegistryImpl::get(const v1::GetModelRequest& request,
                              grpc::ServerWriter<v1::ModelChunk>& writer) {
  if (request.best() && request.version() != 0) {
    return Status(StatusCode::INVALID_ARGUMENT, "GetModel: give a version or best, not both");
  }
  auto meta = request.best()           ? store_.best()
              : request.version() == 0 ? store_.latest()
                                       : store_.info(request.version());
  if (!meta.ok()) return store_error("GetModel", meta);
  if (!meta->has_value()) {
    return Status(StatusCode::NOT_FOUND,
                  request.best() ? "GetModel: no best model yet"
                  : request.version() == 0
                      ? "GetModel: no model published yet"
                      : "GetModel: no version " + std::to_string(request.version()) +
                            " (never published, or pruned: the registry keeps the newest "
                            "--keep-models versions and the best)");
  }
  auto blob = store_.read((*meta)->version);
  if (!blob.ok()) return store_error("GetModel", blob);
  if (!blob->has_value()) {
    return Status(StatusCode::NOT_FOUND, "GetModel: version " + std::to_string((*meta)->version) +
                                             " was pruned while being read (--keep-models)");
  }
  const std::string& data = **blob;
  std::size_t offset = 0;
  v1::ModelChunk chunk;
  *chunk.mutable_info() = to_proto(**meta);
  do {
    const std::size_t n = std::min<std::size_t>(options_.chunk_bytes, data.size() - offset);
    chunk.set_data(data.substr(offset, n));
    offset += n;
    if (!writer.Write(chunk)) return Status(StatusCode::CANCELLED, "GetModel: client went away");
    chunk.clear_info();
  } while (offset < data.size());
  return Status::OK;
}

Status ModelRegistryImpl::LatestModel(grpc::ServerContext* context, const v1::LatestModelRequest*,
                                      v1::ModelInfo* reply) {
  return guarded(metrics_, "LatestModel", [&] {
    if (auto denied = auth_.check(*context, rpc::Action::kRead, "LatestModel"); !denied.ok())
      return denied;
    auto meta = store_.latest();
    if (!meta.ok()) return store_error("LatestModel", meta);
    if (!meta->has_value()) return Status(StatusCode::NOT_FOUND, "no model published yet");
    *reply = to_proto(**meta);
    metrics_.model_version.set(static_cast<double>((*meta)->version));
    return Status::OK;
  });
}

Status ModelRegistryImpl::BestModel(grpc::ServerContext* context, const v1::BestModelRequest*,
                                    v1::ModelInfo* reply) {
  return guarded(metrics_, "BestModel", [&] {
    if (auto denied = auth_.check(*context, rpc::Action::kRead, "BestModel"); !denied.ok())
      return denied;
    auto meta = store_.best();
    if (!meta.ok()) return store_error("BestModel", meta);
    if (!meta->has_value()) return Status(StatusCode::NOT_FOUND, "no best model yet");
    *reply = to_proto(**meta);
    return Status::OK;
  });
}

Status ModelRegistryImpl::SetBest(grpc::ServerContext* context, const v1::SetBestRequest* request,
                                  v1::ModelInfo* reply) {
  return guarded(metrics_, "SetBest", [&] {
    if (auto denied = auth_.check(*context, rpc::Action::kSetBest, "SetBest"); !denied.ok())
      return denied;
    auto moved = store_.set_best(request->version());
    if (!moved.ok()) return unavailable("SetBest", moved.error());
    if (!*moved) {
      return Status(StatusCode::NOT_FOUND,
                    "SetBest: no version " + std::to_string(request->version()));
    }
    auto meta = store_.info(request->version());
    if (!meta.ok() || !meta->has_value()) {
      return meta.ok() ? unavailable("SetBest", "version vanished") : store_error("SetBest", meta);
    }
    *reply = to_proto(**meta);
    return Status::OK;
  });
}

Status ModelRegistryImpl::WatchModels(grpc::ServerContext* context,
                                      const v1::WatchModelsRequest* request,
                                      grpc::ServerWriter<v1::ModelInfo>* writer) {
  return guarded(
      metrics_, "WatchModels",
      [&] {
        if (auto denied = auth_.check(*context, rpc::Action::kRead, "WatchModels"); !denied.ok())
          return denied;
        return watch(*context, *request, *writer);
      },
      /*timed=*/false);
}

Status ModelRegistryImpl::watch(grpc::ServerContext& context, const v1::WatchModelsRequest& request,
                                grpc::ServerWriter<v1::ModelInfo>& writer) {
  std::uint64_t sent = request.after_version();
  bool first = true;
  while (!context.IsCancelled()) {
    std::uint64_t seen_publishes;
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return Status(StatusCode::UNAVAILABLE, "WatchModels: the server is stopping");
      seen_publishes = publishes_;
    }
    auto newer = store_.versions_after(sent, kWatchBatch);
    if (newer.ok() && newer->size() == kWatchBatch) {
      // Further behind than a batch: what a follower needs is the newest
      // version, not the oldest of those it missed.
      auto latest = store_.latest();
      if (latest.ok() && latest->has_value() && (*latest)->version > newer->back().version) {
        newer->assign(1, **latest);
      }
    }
    if (newer.ok()) {
      std::vector<replay::ModelMeta>& list = *newer;
      // A watcher from scratch starts at the latest version, not at version 1.
      if (first && request.after_version() == 0 && !list.empty()) {
        list.erase(list.begin(), list.end() - 1);
      }
      for (const auto& meta : list) {
        if (!writer.Write(to_proto(meta))) return Status::OK;  // the client left
        sent = meta.version;
      }
      first = false;
    }
    // Store failures are retried at the next poll; the stream stays open.
    std::unique_lock lock(mutex_);
    published_.wait_for(lock, std::chrono::milliseconds(options_.watch_poll_ms),
                        [&] { return stopping_ || publishes_ != seen_publishes; });
  }
  return Status::OK;
}

void ModelRegistryImpl::stop_watchers() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  published_.notify_all();
}

}  // namespace chessrl::replay_service

// ModelRegistryImpl: the model registry's handlers (PublishModel, GetModel,
// LatestModel, SetBest, BestModel) and ModelMeta <-> ModelInfo. WatchModels
// is in model_watch.cpp, GetModel in model_download.cpp, LeaseModel in
// model_lease.cpp.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "handler_util.h"
#include "chessrl/replay_service/replay_service.h"
#include "chessrl/rpc/clients.h"

namespace chessrl::replay_service {
namespace {

using grpc::Status;
using grpc::StatusCode;
using handler::authorized;
using handler::store_error;
using handler::unavailable;

// Versions whose metadata the hub keeps; a watcher further behind skips to
// the newest.
constexpr std::size_t kRecentVersions = 64;
// The download side's worker threads (store calls, the cache's reads): one
// read in flight per version, so a few are enough.
constexpr int kDownloadThreads = 3;

std::int64_t now_unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

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
    : store_(store),
      metrics_(metrics),
      options_(options),
      auth_(auth),
      hub_(std::make_unique<ModelHub>(
          store, ModelHubOptions{std::chrono::milliseconds(std::max(1, options.watch_poll_ms)),
                                 kRecentVersions})),
      cache_(std::make_unique<ModelBlobCache>(
          store, options.model_cache_bytes,
          ModelCacheMetrics{&metrics.model_cache_bytes, &metrics.model_cache_versions,
                            &metrics.model_cache_hits, &metrics.model_blob_reads})),
      downloads_(std::make_unique<DownloadQueue>(options.max_model_downloads,
                                                 &metrics.model_downloads_in_flight,
                                                 &metrics.model_downloads_waiting)),
      pool_(std::make_unique<TaskPool>(kDownloadThreads)) {
  hub_->start();
}

ModelRegistryImpl::~ModelRegistryImpl() {
  pool_.reset();  // its tasks use the hub and the cache
  hub_->stop();
}

replay::StoreResult<std::optional<replay::ModelMeta>> ModelRegistryImpl::latest() {
  const std::shared_ptr<const ModelView> view = hub_->view();
  if (!view->known) return store_.latest();  // the hub has not reached the store yet
  if (const replay::ModelMeta* newest = view->newest()) return std::optional(*newest);
  return std::optional<replay::ModelMeta>();
}

replay::StoreResult<std::optional<ModelRegistryImpl::ModelBlob>> ModelRegistryImpl::model_blob(
    std::uint64_t version) {
  std::optional<replay::ModelMeta> meta;
  if (version == 0) {
    auto newest = latest();
    if (!newest.ok()) return newest.failure();
    if (!newest->has_value()) return std::optional<ModelBlob>();
    meta = std::move(*newest);
  } else if (const replay::ModelMeta* known = hub_->view()->find(version)) {
    meta = *known;
  }
  return cache_->get(meta ? meta->version : version, meta ? &*meta : nullptr);
}

Status ModelRegistryImpl::PublishModel(grpc::ServerContext* context,
                                       grpc::ServerReader<v1::ModelChunk>* reader,
                                       v1::ModelInfo* reply) {
  return publish_model(*context, *reader, *reply);
}

Status ModelRegistryImpl::publish_model(grpc::ServerContext& context,
                                        grpc::ServerReaderInterface<v1::ModelChunk>& reader,
                                        v1::ModelInfo& reply) {
  return authorized(metrics_, auth_, context, rpc::Action::kPublishModel, "PublishModel", [&] {
    return publish(context, reader, reply);
  });
}

Status ModelRegistryImpl::publish(grpc::ServerContext& context,
                                  grpc::ServerReaderInterface<v1::ModelChunk>& reader,
                                  v1::ModelInfo& reply) {
  v1::ModelChunk chunk;
  if (!reader.Read(&chunk)) {
    return Status(StatusCode::INVALID_ARGUMENT, "PublishModel: no chunks");
  }
  if (!chunk.has_info() || chunk.info().version() == 0) {
    return Status(StatusCode::INVALID_ARGUMENT,
                  "PublishModel: the first chunk must carry info with a version > 0");
  }
  if (chunk.info().version() > rpc::kMaxModelVersion) {
    return Status(StatusCode::INVALID_ARGUMENT,
                  "PublishModel: version " + std::to_string(chunk.info().version()) +
                      " is above the largest the registry takes (" +
                      std::to_string(rpc::kMaxModelVersion) + ", 2^53 - 1)");
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
  // LatestModel and GetModel see it at once; the hub's thread tells the watchers.
  hub_->refresh();
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

Status ModelRegistryImpl::LatestModel(grpc::ServerContext* context, const v1::LatestModelRequest*,
                                      v1::ModelInfo* reply) {
  return authorized(metrics_, auth_, *context, rpc::Action::kRead, "LatestModel", [&] {
    auto meta = latest();  // from memory: no store call
    if (!meta.ok()) return store_error("LatestModel", meta);
    if (!meta->has_value()) return Status(StatusCode::NOT_FOUND, "no model published yet");
    *reply = to_proto(**meta);
    metrics_.model_version.set(static_cast<double>((*meta)->version));
    return Status::OK;
  });
}

Status ModelRegistryImpl::BestModel(grpc::ServerContext* context, const v1::BestModelRequest*,
                                    v1::ModelInfo* reply) {
  return authorized(metrics_, auth_, *context, rpc::Action::kRead, "BestModel", [&] {
    auto meta = store_.best();
    if (!meta.ok()) return store_error("BestModel", meta);
    if (!meta->has_value()) return Status(StatusCode::NOT_FOUND, "no best model yet");
    *reply = to_proto(**meta);
    return Status::OK;
  });
}

Status ModelRegistryImpl::SetBest(grpc::ServerContext* context, const v1::SetBestRequest* request,
                                  v1::ModelInfo* reply) {
  return authorized(metrics_, auth_, *context, rpc::Action::kSetBest, "SetBest", [&] {
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

}  // namespace chessrl::replay_service

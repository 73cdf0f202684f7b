#include "chessrl/replay_service/replay_service.h"

#include <chrono>
#include <cstdio>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "chessrl/core/splitmix64.h"
#include "handler_util.h"

namespace chessrl::replay_service {
namespace {

using grpc::Status;
using grpc::StatusCode;
using handler::authorized;
using handler::store_error;
using handler::unavailable;

// gRPC's name of a status code, as grpc-go and grpcurl print it.
const char* code_name(StatusCode code) {
  switch (code) {
    case StatusCode::OK:
      return "OK";
    case StatusCode::CANCELLED:
      return "CANCELLED";
    case StatusCode::UNKNOWN:
      return "UNKNOWN";
    case StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case StatusCode::ABORTED:
      return "ABORTED";
    case StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case StatusCode::INTERNAL:
      return "INTERNAL";
    case StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "UNKNOWN";
  }
}

constexpr const char* kMethods[] = {"PushGames",    "Sample",   "Stats",
                                    "PublishModel", "GetModel", "LatestModel",
                                    "WatchModels",  "SetBest",  "BestModel",
                                    "LeaseModel"};
constexpr const char* kCallsHelp = "gRPC calls answered, by method and status code";
constexpr const char* kDurationHelp =
    "Seconds to answer a gRPC call, by method (WatchModels streams are not timed)";

std::vector<double> duration_buckets() { return metrics::exponential_buckets(0.0005, 2, 15); }

constexpr const char* kPushesRefusedName = "chessrl_replay_pushes_refused_total";
constexpr const char* kPushesRefusedHelp =
    "PushGames calls refused at the door before any work, by reason: busy_calls "
    "(--max-push-calls in progress), busy_bytes (--max-push-bytes of requests in progress), "
    "too_large (one call over --max-push-bytes)";
constexpr const char* kPushRefusalReasons[] = {"busy_calls", "busy_bytes", "too_large"};

std::string mib_text(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
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
      model_watchers(registry.gauge("chessrl_replay_model_watchers",
                                    "WatchModels streams open (capped by --max-watchers)")),
      model_downloads_in_flight(
          registry.gauge("chessrl_replay_model_downloads_in_flight",
                         "GetModel streams sending (capped by --max-model-downloads)")),
      model_downloads_waiting(
          registry.gauge("chessrl_replay_model_downloads_waiting",
                         "GetModel calls waiting in order for a download slot")),
      model_cache_bytes(registry.gauge("chessrl_replay_model_cache_bytes",
                                       "Bytes of model versions held in memory (capped by "
                                       "--model-cache-bytes)")),
      model_cache_versions(registry.gauge("chessrl_replay_model_cache_versions",
                                          "Model versions held in memory")),
      model_cache_hits(registry.counter("chessrl_replay_model_cache_hits_total",
                                        "Model downloads served from memory (or from a read "
                                        "another download had started)")),
      model_blob_reads(registry.counter("chessrl_replay_model_blob_reads_total",
                                        "Model versions read whole from the store")),
      model_downloads_deferred(registry.counter(
          "chessrl_replay_model_downloads_deferred_total",
          "GetModel calls answered UNAVAILABLE with a chessrl-retry-after-ms trailer: their "
          "deadline would pass before their turn for a download slot")),
      pushes_in_flight(
          registry.gauge("chessrl_replay_pushes_in_flight",
                         "PushGames calls being handled (capped by --max-push-calls)")),
      push_bytes_in_flight(
          registry.gauge("chessrl_replay_push_bytes_in_flight",
                         "Request bytes of the PushGames calls being handled (capped by "
                         "--max-push-bytes)")),
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
  for (const auto reason : record::kAllRejectReasons) rejected(reason);  // export zeros
  store_persistence_ok("aof");
  store_persistence_ok("rdb");
  for (const char* reason : kPushRefusalReasons) pushes_refused(reason);  // export zeros
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

void ReplayMetrics::record_refusal(std::string_view method, grpc::StatusCode code) {
  const auto it = durations_.find(method);
  record_call(it != durations_.end() ? it->first.c_str() : "unknown", code, 0, false);
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

metrics::Counter& ReplayMetrics::pushes_refused(std::string_view reason) {
  return registry_.counter(kPushesRefusedName, kPushesRefusedHelp,
                           {{"reason", std::string(reason)}});
}

metrics::Counter& ReplayMetrics::rejected(record::RejectReason reason) {
  return registry_.counter("chessrl_replay_games_rejected_total",
                           "Pushed games refused by validation, by reason",
                           {{"reason", std::string(record::reason_label(reason))}});
}

// ---------------------------------------------------------------- replay

ReplayServiceImpl::ReplayServiceImpl(replay::ReplayStore& store, ReplayMetrics& metrics,
                                     ReplayServiceOptions options, const rpc::ServerAuth& auth)
    : store_(store),
      metrics_(metrics),
      options_(options),
      auth_(auth),
      producers_(options_.producers, metrics.registry(), options_.limits.max_plies),
      seed_base_([] {
        std::random_device rd;  // 32 bits a call: two make the 64-bit base
        return (std::uint64_t(rd()) << 32) ^ rd();
      }()) {}

Status ReplayServiceImpl::PushGames(grpc::ServerContext* context,
                                    const v1::PushGamesRequest* request,
                                    v1::PushGamesReply* reply) {
  return authorized(metrics_, auth_, *context, rpc::Action::kPushGames, "PushGames", [&] {
    // gRPC has read and parsed the message; what it holds is counted from here
    // until the call is answered, and a call that does not fit is answered at once.
    const std::uint64_t bytes = request->ByteSizeLong();
    if (Status entered = enter_push(bytes); !entered.ok()) return entered;
    struct Leave {
      ReplayServiceImpl& service;
      std::uint64_t bytes;
      ~Leave() { service.leave_push(bytes); }
    } leave{*this, bytes};
    return push(*request, *reply);
  });
}

Status ReplayServiceImpl::enter_push(std::uint64_t bytes) {
  const std::uint32_t max_calls = options_.max_push_calls;
  const std::uint64_t max_bytes = options_.max_push_bytes;
  if (max_bytes > 0 && bytes > max_bytes) {
    metrics_.pushes_refused("too_large").inc();
    return Status(StatusCode::RESOURCE_EXHAUSTED,
                  "PushGames: the call holds " + mib_text(bytes) + " (" + std::to_string(bytes) +
                      " bytes), more than all pushes together may (" + std::to_string(max_bytes) +
                      " bytes, --max-push-bytes); nothing was stored; send fewer games a call");
  }
  std::lock_guard lock(push_mutex_);
  if (max_calls > 0 && pushes_in_flight_ >= max_calls) {
    metrics_.pushes_refused("busy_calls").inc();
    return Status(StatusCode::UNAVAILABLE,
                  "PushGames: replay is busy: " + std::to_string(pushes_in_flight_) +
                      " pushes in progress, at most " + std::to_string(max_calls) +
                      " (--max-push-calls); nothing was stored; push again after a backoff");
  }
  if (max_bytes > 0 && push_bytes_in_flight_ + bytes > max_bytes) {
    metrics_.pushes_refused("busy_bytes").inc();
    return Status(StatusCode::UNAVAILABLE,
                  "PushGames: replay is busy: the pushes in progress hold " +
                      mib_text(push_bytes_in_flight_) + ", this call " + mib_text(bytes) +
                      ", at most " + mib_text(max_bytes) +
                      " together (--max-push-bytes); nothing was stored; push again after a "
                      "backoff");
  }
  ++pushes_in_flight_;
  push_bytes_in_flight_ += bytes;
  metrics_.pushes_in_flight.set(pushes_in_flight_);
  metrics_.push_bytes_in_flight.set(static_cast<double>(push_bytes_in_flight_));
  return Status::OK;
}

void ReplayServiceImpl::leave_push(std::uint64_t bytes) {
  std::lock_guard lock(push_mutex_);
  --pushes_in_flight_;
  push_bytes_in_flight_ -= bytes;
  metrics_.pushes_in_flight.set(pushes_in_flight_);
  metrics_.push_bytes_in_flight.set(static_cast<double>(push_bytes_in_flight_));
}

Status ReplayServiceImpl::push(const v1::PushGamesRequest& request, v1::PushGamesReply& reply) {
  if (request.games_size() > static_cast<int>(options_.max_push_games)) {
    return Status(StatusCode::RESOURCE_EXHAUSTED,
                  "PushGames: " + std::to_string(request.games_size()) +
                      " games in one call; at most " + std::to_string(options_.max_push_games) +
                      " (--max-push-games); nothing was stored");
  }
  if (request.games_size() > 1) {
    std::uint64_t positions = 0;
    for (const v1::Game& game : request.games()) positions += std::uint64_t(game.targets_size());
    if (positions > options_.max_push_positions) {
      producers_.refused(request, "too_many_positions");
      return Status(StatusCode::RESOURCE_EXHAUSTED,
                    "PushGames: " + std::to_string(positions) +
                        " training positions in one call of several games; at most " +
                        std::to_string(options_.max_push_positions) +
                        " (--max-push-positions); nothing was stored");
    }
  }
  if (Status admitted = producers_.admit(request); !admitted.ok()) return admitted;
  std::vector<record::StoredGame> valid;
  std::vector<int> valid_index;  // request index of each valid game
  std::vector<std::size_t> rejected;
  reply.mutable_results()->Reserve(request.games_size());
  for (int i = 0; i < request.games_size(); ++i) {
    const v1::Game& game = request.games(i);
    v1::PushResult* result = reply.add_results();
    result->set_id(game.id());
    record::Validation validation = record::validate_game(game, options_.limits);
    if (auto* rejection = std::get_if<record::Rejection>(&validation)) {
      result->set_status(v1::REJECTED);
      result->set_reason(std::string(record::reason_label(rejection->reason)));
      result->set_detail(std::move(rejection->detail));
      rejected.push_back(static_cast<std::size_t>(rejection->reason));
      producers_.count(game.producer(), ProducerGate::Result::kRejected);
      continue;
    }
    valid.push_back(std::get<record::StoredGame>(std::move(validation)));
    valid_index.push_back(i);
  }
  // Rejections are counted once per push, even when the store then fails
  // and the client retries: a retried bad game is counted again, as it should.
  for (const std::size_t reason : rejected) {
    metrics_.rejected(static_cast<record::RejectReason>(reason)).inc();
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
      producers_.count(request.games(valid_index[k]).producer(), ProducerGate::Result::kStored,
                       valid[k].positions.size());
    } else if (pushed == replay::PushStatus::kDuplicate) {
      result->set_status(v1::DUPLICATE);
      metrics_.games_duplicate.inc();
      producers_.count(request.games(valid_index[k]).producer(), ProducerGate::Result::kDuplicate);
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
  return authorized(metrics_, auth_, *context, rpc::Action::kSample, "Sample", [&] {
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
  return authorized(metrics_, auth_, *context, rpc::Action::kRead, "Stats", [&] {
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
    for (const auto reason : record::kAllRejectReasons) {
      (*reply->mutable_rejected_total())[std::string(record::reason_label(reason))] =
          static_cast<std::uint64_t>(metrics_.rejected(reason).value());
    }
    metrics_.window_positions.set(static_cast<double>(stats->positions));
    metrics_.window_games.set(static_cast<double>(stats->games));
    return Status::OK;
  });
}

}  // namespace chessrl::replay_service

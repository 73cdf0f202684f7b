#include "chessrl/replay_service/replay_server.h"

#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

#include "chessrl/core/error.h"
#include "chessrl/rpc/token_gate.h"

namespace chessrl::replay_service {

ReplayServer::ReplayServer(replay::ReplayStore& store, replay::ModelStore& models,
                           metrics::Registry& registry, ReplayServerOptions options)
    : store_(store),
      models_(models),
      metrics_(registry),
      options_(std::move(options)),
      replay_service_(store, metrics_, options_.replay, options_.auth),
      registry_service_(models, metrics_, options_.models, options_.auth) {
  // One call of the largest message gRPC takes must fit the push budget alone.
  const std::uint64_t max_push_bytes = options_.replay.max_push_bytes;
  if (max_push_bytes != 0 && max_push_bytes < std::uint64_t(options_.max_message_bytes)) {
    throw Error("replay: --max-push-bytes " + std::to_string(max_push_bytes) +
                " is below --max-message-bytes " + std::to_string(options_.max_message_bytes) +
                ": a push gRPC accepts could never be admitted");
  }
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  // Plaintext or TLS, with the token checked on the initial metadata, before
  // gRPC reads the message (rpc/token_gate.h); the handlers check the role.
  std::shared_ptr<grpc::ServerCredentials> credentials = rpc::token_gated_credentials(
      std::make_shared<const rpc::ServerAuth>(options_.auth), options_.tls_cert_pem,
      options_.tls_key_pem, [this](const std::string& method, grpc::StatusCode code) {
        metrics_.record_refusal(method, code);
      });
  builder.AddListeningPort(options_.listen, credentials, &port_);
  builder.RegisterService(&replay_service_);
  builder.RegisterService(&registry_service_);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                             static_cast<int>(options_.keepalive_min_ping_interval.count()));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.SetMaxReceiveMessageSize(options_.max_message_bytes);
  builder.SetMaxSendMessageSize(options_.max_send_message_bytes);

  server_ = builder.BuildAndStart();
  if (!server_ || port_ == 0) throw Error("replay: cannot listen on " + options_.listen);
  monitor_ = std::thread([this] { monitor(); });
}

ReplayServer::~ReplayServer() { shutdown(std::chrono::milliseconds(0)); }

bool ReplayServer::serving() const {
  std::lock_guard lock(mutex_);
  return serving_;
}

void ReplayServer::monitor() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    auto stats = store_.stats();
    const bool up = stats.ok();
    if (up) {
      metrics_.window_positions.set(static_cast<double>(stats->positions));
      metrics_.window_games.set(static_cast<double>(stats->games));
      // The registry's memory of the latest version (its hub polls the store).
      if (auto latest = registry_service_.latest(); latest.ok() && latest->has_value()) {
        metrics_.model_version.set(static_cast<double>((*latest)->version));
      }
      // A Redis that refuses INFO (some managed ones do) leaves the gauges as they are.
      if (auto info = store_.server_info(); info.ok() && info->has_value()) {
        metrics_.set_store_info(**info);
      }
    }
    metrics_.store_up.set(up ? 1.0 : 0.0);
    if (auto* health = server_->GetHealthCheckService()) {
      health->SetServingStatus(up);
    }
    lock.lock();
    serving_ = up;
    stop_cv_.wait_for(lock, options_.monitor_interval, [this] { return stopping_; });
  }
}

void ReplayServer::shutdown(std::chrono::milliseconds grace) {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (monitor_.joinable()) monitor_.join();
  if (auto* health = server_->GetHealthCheckService()) health->Shutdown();
  registry_service_.stop_watchers();
  registry_service_.stop_downloads();
  server_->Shutdown(std::chrono::system_clock::now() + grace);
  server_->Wait();
}

}  // namespace chessrl::replay_service

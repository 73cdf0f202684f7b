// ReplayServer: the chessrl-replay process minus its main(): the gRPC server
// with ReplayService, ModelRegistry and the standard health service
// (grpc.health.v1), plus a monitor thread that checks the store every
// `monitor_interval` and keeps the health status, the window gauges and the
// store's INFO gauges (memory, persistence) current. Used by main.cpp and,
// in-process, by the integration tests.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <grpcpp/server.h>

#include "chessrl/metrics/registry.h"
#include "chessrl/replay_service/replay_service.h"

namespace chessrl::replay_service {

struct ReplayServerOptions {
  std::string listen = "0.0.0.0:50051";  // "127.0.0.1:0" picks a free port
  ReplayServiceOptions replay;
  ModelRegistryOptions models;
  // The largest message received: a PushGames or a PublishModel chunk (4 MiB).
  // gRPC reads a whole message before any handler runs, and holds it twice
  // (the bytes and the parsed request) while the handler works, so this and
  // the number of calls at once bound what pushes cost. The token is checked
  // before the message is read (rpc/token_gate.h): only holders of a token can
  // spend it. Self-play's default push (32 games of 200 plies, a target of up
  // to 35 moves on every ply: about 1.6 MB) is far below it; a bigger batch
  // the service refuses is split by the pusher.
  int max_message_bytes = 8 << 20;
  // The largest message sent (a Sample reply of up to --max-sample positions).
  int max_send_message_bytes = 64 << 20;
  std::chrono::milliseconds monitor_interval{1000};
  // The shortest gap between a client's keepalive pings the server accepts
  // (rpc::ClientOptions::keepalive_time is 10 s); gRPC's default, 5 min, would
  // answer the clients' pings with GOAWAY "too_many_pings".
  std::chrono::milliseconds keepalive_min_ping_interval{5000};
  // Bearer tokens every call must carry (none: open; see chessrl/rpc/auth.h).
  // The standard health service stays open: probes carry no token.
  rpc::ServerAuth auth;
  // TLS when a certificate is given (PEM; the key must match it).
  std::string tls_cert_pem;
  std::string tls_key_pem;
};

class ReplayServer {
 public:
  // Starts serving. Throws chessrl::Error naming the address when it cannot listen.
  ReplayServer(replay::ReplayStore& store, replay::ModelStore& models,
               metrics::Registry& registry, ReplayServerOptions options);
  ~ReplayServer();  // shutdown() with a zero grace period if not done yet
  ReplayServer(const ReplayServer&) = delete;
  ReplayServer& operator=(const ReplayServer&) = delete;

  int port() const { return port_; }
  // Whether the last store check succeeded (what the health service says).
  bool serving() const;
  // The model registry service (its hub, cache and model_blob()).
  ModelRegistryImpl& registry() { return registry_service_; }

  // Graceful stop: refuses new calls, ends WatchModels streams, lets calls in
  // flight (pushes) finish for up to `grace`, then cancels what is left.
  void shutdown(std::chrono::milliseconds grace);

 private:
  void monitor();
  replay::ReplayStore& store_;
  replay::ModelStore& models_;
  ReplayMetrics metrics_;
  ReplayServerOptions options_;
  ReplayServiceImpl replay_service_;
  ModelRegistryImpl registry_service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  mutable std::mutex mutex_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  bool serving_ = false;
  std::thread monitor_;
};

}  // namespace chessrl::replay_service

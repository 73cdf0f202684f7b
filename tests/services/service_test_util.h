// Helpers for the replay service tests: synthetic games and one way to break
// each rule the validator checks.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "chessrl/harness/synthetic_game.h"
#include "chessrl/rpc/clients.h"
#include "chessrl/v1/game.pb.h"
#include "chessrl/v1/replay.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "chessrl/replay_service/replay_server.h"

namespace chessrl::testing {

// A server on a free loopback port that notices store changes within 0.1 s.
inline replay_service::ReplayServerOptions fast_server_options() {
  replay_service::ReplayServerOptions options;
  options.listen = "127.0.0.1:0";
  options.monitor_interval = std::chrono::milliseconds(50);
  options.models.watch_poll_ms = 100;
  return options;
}

// A client of that server that tries once, so a test sees every failure.
inline rpc::ClientOptions single_try_client(int port) {
  rpc::ClientOptions options;
  options.address = "127.0.0.1:" + std::to_string(port);  // one attempt: the default
  options.deadline = std::chrono::seconds(10);
  return options;
}

inline v1::Game game(std::uint64_t seed, int plies = 40, const std::string& prefix = "g-") {
  harness::SyntheticGameOptions options;
  options.max_plies = plies;
  return harness::make_synthetic_game(seed, options, prefix);
}

inline v1::PushGamesRequest batch(std::uint64_t first_seed, int n, int plies = 40,
                                  const std::string& prefix = "g-") {
  v1::PushGamesRequest request;
  for (int i = 0; i < n; ++i) {
    *request.add_games() = game(first_seed + static_cast<std::uint64_t>(i), plies, prefix);
  }
  return request;
}

struct BadGame {
  std::string reason;  // the label the service must answer with
  v1::Game game;
};

// One game per rejection reason, each valid but for one thing.
inline std::vector<BadGame> bad_games() {
  std::vector<BadGame> out;
  auto base = [](const std::string& id) {
    v1::Game g = game(4242, 30, "bad-");
    g.set_id(id);
    return g;
  };
  v1::Game g = base("bad-illegal");
  g.set_moves(3, 0);  // a1a1: never legal
  out.push_back({"illegal_move", g});
  g = base("bad-policy-sum");
  g.mutable_targets(0)->set_policy_probs(0, g.targets(0).policy_probs(0) + 0.2f);
  out.push_back({"bad_policy", g});
  g = base("bad-policy-move");
  g.mutable_targets(0)->set_policy_moves(0, 12 + 64 * 36);  // e2e5 from the start position
  out.push_back({"bad_policy", g});
  g = base("bad-result");
  g.set_termination(v1::CHECKMATE);  // the final position is not mate
  out.push_back({"bad_result", g});
  g = base("bad-fen");
  g.set_start_fen("not a fen");
  out.push_back({"bad_fen", g});
  g = base("bad id with spaces");
  out.push_back({"bad_id", g});
  g = base("bad-malformed");
  g.set_producer(std::string(2000, 'x'));
  for (int i = 0; i < 200; ++i) g.mutable_targets(0)->add_policy_probs(0);
  out.push_back({"malformed", g});
  g = base("bad-huge");
  for (int i = 0; i < 300000; ++i) g.add_moves(0);  // past max_game_bytes and max_plies
  out.push_back({"oversized", g});
  return out;
}

// grpc.health.v1 Check for the whole server ("").
inline grpc::health::v1::HealthCheckResponse::ServingStatus health(int port) {
  auto channel =
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials());
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::health::v1::HealthCheckResponse response;
  auto status = stub->Check(&context, grpc::health::v1::HealthCheckRequest(), &response);
  if (!status.ok()) return grpc::health::v1::HealthCheckResponse::UNKNOWN;
  return response.status();
}

// A push of one small game whose id starts with `id`.
inline v1::PushGamesRequest one_game(const std::string& id) {
  v1::PushGamesRequest request;
  *request.add_games() = game(std::hash<std::string>{}(id), 4, id + "-");
  return request;
}

// Pushes (a new game each time, `pause` apart) until one is acknowledged or
// `limit` passes; the time it took, or nullopt.
inline std::optional<std::chrono::steady_clock::duration> push_until_answered(
    rpc::ReplayClient& client, std::chrono::steady_clock::duration limit,
    std::chrono::milliseconds pause = std::chrono::milliseconds(0)) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; std::chrono::steady_clock::now() - start < limit; ++i) {
    if (client.push_games(one_game("after-" + std::to_string(i))).ok()) {
      return std::chrono::steady_clock::now() - start;
    }
    std::this_thread::sleep_for(pause);
  }
  return std::nullopt;
}

}  // namespace chessrl::testing

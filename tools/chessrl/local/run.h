// One `chessrl local` run (local/command.cpp): start the children in order,
// watch them (restarts, the status line), stop them in order. Each chess-rl
// service is started with --ready-file run/ready/<name>.json (removed before
// every start) and on port 0 at its first start; the ports it names there are
// pinned on its command line, so its restarts keep them. Prometheus names its
// port only in its log; Redis takes a number from pick_port(), one per shard.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "chessrl/core/result.h"
#include "chessrl/core/stop_signals.h"
#include "chessrl/metrics/exposer.h"
#include "chessrl/metrics/registry.h"
#include "local/children.h"
#include "local/devices.h"
#include "local/options.h"
#include "local/status.h"
#include "local/supervisor.h"

namespace chessrl::tool {

inline std::string loopback(int port) { return "127.0.0.1:" + std::to_string(port); }

// Redis shard i's child name and data directory: "redis" (run/redis) for the
// first, as a run without shards has it, then "redis-1", "redis-2", ...
std::string redis_name(int shard);

class LocalRun {
 public:
  LocalRun(const LocalOptions& o, DevicePlan devices)
      : o_(o), devices_(std::move(devices)), supervisor_(RestartPolicy{}, registry_) {}
  // start, watch, stop; the exit status (0 after Ctrl-C or --duration).
  int run(const StopSignals& signals);

 private:
  // ---- the phases (local/command.cpp) ----
  // Every child started and its ports known; false when the start cannot go on
  // (said) or a stop was asked.
  bool start(const StopSignals& signals);
  // The supervisor's restarts and the status line until a stop, --duration or
  // a crash loop; the exit status.
  int watch(const StopSignals& signals);
  // The final status line, then the children stopped in order.
  void stop(int exit_code);
  bool start_replay(const std::vector<std::string>& redis_args, const StopSignals& signals);
  bool start_trainers(const StopSignals& signals);
  void start_players();  // self-play and the evaluator
  bool await_metrics_ports(const StopSignals& signals);

  // ---- the parts (local/run.cpp) ----
  void make_dirs();
  void start_redis(const std::string& program, const std::string& password, int shard);
  void start_prometheus(const StopSignals& signals);
  void start_web(const StopSignals& signals);
  void write_state() const;
  // Starts `name` under the supervisor. `device`: its --device and
  // CUDA_VISIBLE_DEVICES (local/devices.h). `ready_file`: a chess-rl service,
  // given --ready-file.
  Result<Child*> launch(const std::string& name, std::vector<std::string> argv,
                        std::vector<std::pair<std::string, std::string>> env = {},
                        bool optional = false, const DeviceAssignment& device = {}, int nice = 0,
                        bool ready_file = true);
  // The port named `key` ("grpc", "metrics", "rendezvous", "http") in the
  // ready file of `name`'s current start, waiting up to `patience` while
  // supervising. nullopt on a crash loop (said), at the deadline (said unless
  // `quiet_timeout`) or when a stop is asked.
  std::optional<int> await_port(const std::string& name, const std::string& key,
                                std::chrono::seconds patience, const StopSignals& signals,
                                bool quiet_timeout = false);
  // The same for a program without a ready file: the number after `key` in
  // its log since its launch.
  std::optional<int> await_logged_port(const std::string& name, const std::string& key,
                                       std::chrono::seconds patience, const StopSignals& signals);
  std::optional<int> await(const std::string& name, const std::string& what,
                           std::chrono::seconds patience, const StopSignals& signals,
                           bool quiet_timeout, const std::function<std::optional<int>()>& find);
  // Keeps `port` for `name`'s restarts: its command line's `flag` address.
  void pin_port(const std::string& name, const std::string& flag, int port);
  bool wait_healthy(const std::string& name, int port, const StopSignals& signals);
  Scrape scrape() const;
  // The status line with the restarts so far, e.g. "... | restarts redis ↻1".
  std::string with_restarts(const std::string& line) const;
  std::string log_path(const std::string& name) const {
    return (root_ / "logs" / (name + ".log")).string();
  }
  std::string ready_path(const std::string& name) const {
    return (root_ / "ready" / (name + ".json")).string();
  }
  std::string binary(const std::string& name) const;
  // --token-file for `role`, or nothing when tokens are off.
  std::vector<std::string> token(const char* role) const;
  void say(const std::string& text) const;

  LocalOptions o_;
  DevicePlan devices_;
  std::filesystem::path root_;
  struct Ports {
    std::vector<int> redis;
    int replay = 0, replay_metrics = 0, master = 0, prometheus = 0, web = 0;
  } ports_;
  metrics::Registry registry_;  // chessrl local's own /metrics (restarts per child)
  Supervisor supervisor_;
  std::unique_ptr<metrics::Exposer> exposer_;
  std::vector<std::pair<std::string, int>> metrics_ports_;  // child name -> port
  std::map<std::string, std::vector<std::string>> argv_;    // child name -> its command line
  std::map<std::string, std::uintmax_t> log_from_;  // child name -> its log's size at launch
  bool prometheus_started_ = false;
  bool web_started_ = false;
  bool ready_ = false;           // every child launched and its ports known
  std::int64_t started_ms_ = 0;  // unix ms when training in this directory began
  std::chrono::steady_clock::time_point started_at_;  // this run's start
};

}  // namespace chessrl::tool

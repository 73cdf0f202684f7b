// What `chessrl bench replay` and `chessrl bench load` share: the private
// redis-server they run against, the synthetic games they push, and the
// options that shape those games and calls. Header-only: both commands are
// built only with the services (CHESSRL_SERVICES).
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "chessrl/core/error.h"
#include "chessrl/harness/redis_server.h"
#include "chessrl/harness/synthetic_game.h"
#include "chessrl/rpc/clients.h"
#include "chessrl/core/subprocess.h"
#include "chessrl/harness/ports.h"
#include "chessrl/harness/service_binary.h"

namespace chessrl::tool {

// A private redis-server (RedisServer: its own directory and password, AOF
// with `appendfsync`; on a port taken before it bound, it starts again on
// another).
inline std::unique_ptr<harness::RedisServer> start_bench_redis(const std::string& password,
                                                              const std::string& appendfsync) {
  harness::RedisServer::Options options;
  options.password = password;
  options.appendfsync = appendfsync;
  return harness::RedisServer::start(options);
}

// chessrl-replay as a child over `redis`, on ports the kernel picks (gRPC on
// `listen` instead when given), read from its ready file: gRPC and, unless
// `metrics` is false, its metrics port (and its probe port, with --probe-listen).
struct ReplayChild {
  std::unique_ptr<Process> child;
  int port = 0;
  int metrics_port = 0;  // 0: metrics off
  int probe_port = 0;    // 0: none (no --probe-listen)
  std::string log_path;
};

// Which chessrl-replay, and where it logs: several over one Redis need a log each.
struct ReplayProgram {
  std::string binary;    // its path
  std::string log_path;  // empty: <redis dir>/chessrl-replay.log
};

// Starts `program` with `extra` arguments and waits until it answers Stats;
// errors start with `what` ("bench load") and carry its log's tail.
inline ReplayChild start_replay_program(
    const ReplayProgram& program, const harness::RedisServer& redis,
    const std::vector<std::string>& extra, bool metrics, const std::string& what,
    const std::vector<std::pair<std::string, std::string>>& env = {}, const std::string& token = "",
    const std::string& listen = "127.0.0.1:0") {
  ProcessSpec spec;
  spec.argv = {program.binary, "--listen", listen, "--metrics-listen",
               metrics ? "127.0.0.1:0" : "off", "--redis-port", std::to_string(redis.port())};
  spec.argv.insert(spec.argv.end(), extra.begin(), extra.end());
  spec.env = {{"CHESSRL_REDIS_PASSWORD", redis.password()}};
  spec.env.insert(spec.env.end(), env.begin(), env.end());
  spec.output_path =
      program.log_path.empty() ? redis.dir() + "/chessrl-replay.log" : program.log_path;
  spec.null_stdin = true;
  const std::string ready_file = spec.output_path + ".ready.json";
  spec.argv.insert(spec.argv.end(), {"--ready-file", ready_file});
  std::remove(ready_file.c_str());
  ReplayChild out;
  out.log_path = spec.output_path;
  out.child = std::make_unique<Process>(Process::start(spec).value_or_throw());
  // It binds ports the kernel picks and names them in its ready file: no
  // number picked beforehand that another process could take first.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::optional<harness::ReadyFile> ready;
  while (!(ready = harness::read_ready_file(ready_file))) {
    if (out.child->exited() || std::chrono::steady_clock::now() > deadline)
      throw Error(what + ": chessrl-replay did not write " + ready_file + " (" +
                  out.child->status() + "); its log:\n" + log_tail(out.log_path, 20));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  out.port = ready->port("grpc");
  out.metrics_port = ready->port("metrics");
  out.probe_port = ready->port("probe");
  rpc::ClientOptions wait;
  wait.address = "127.0.0.1:" + std::to_string(out.port);
  wait.attempts = 40;
  wait.backoff_max = std::chrono::milliseconds(250);
  wait.security.token = token;
  if (auto up = rpc::ReplayClient(wait).stats(); !up.ok())
    throw Error(what + ": chessrl-replay did not answer (" + up.error() + "); its log:\n" +
                log_tail(out.log_path, 20));
  return out;
}

// start_replay_program with the chessrl-replay found in `bin_dir` (or beside
// this program), logging to <redis dir>/chessrl-replay.log.
inline ReplayChild start_replay_child(
    const harness::RedisServer& redis, const std::string& bin_dir,
    const std::vector<std::string>& extra, bool metrics, const std::string& what,
    const std::vector<std::pair<std::string, std::string>>& env = {}, const std::string& token = "",
    const std::string& listen = "127.0.0.1:0") {
  return start_replay_program({harness::find_service_binary("chessrl-replay", bin_dir).value_or_throw(), ""},
                              redis, extra, metrics, what, env, token, listen);
}

// A process's resident set in KiB (VmRSS), -1 when unreadable; VmHWM with `peak`.
inline long rss_kb(int pid, bool peak = false) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  const std::string key = peak ? "VmHWM:" : "VmRSS:";
  while (std::getline(status, line))
    if (line.rfind(key, 0) == 0) return std::stol(line.substr(key.size()));
  return -1;
}

// A field of Redis's INFO memory ("used_memory", "used_memory_human"), "?" when absent.
inline std::string redis_memory_field(const harness::RedisServer& redis, const std::string& field) {
  std::istringstream info(redis.cli({"INFO", "memory"}));
  std::string line;
  while (std::getline(info, line))
    if (line.rfind(field + ":", 0) == 0) {
      std::string value = line.substr(field.size() + 1);
      while (!value.empty() && (value.back() == '\r' || value.back() == ' ')) value.pop_back();
      return value;
    }
  return "?";
}

// 256 synthetic games of at most `plies` plies, seeds 0..255.
inline std::vector<v1::Game> synthetic_game_pool(int plies, double target_fraction,
                                                 const std::string& producer) {
  harness::SyntheticGameOptions options;
  options.max_plies = plies;
  options.target_fraction = target_fraction;
  options.producer = producer;
  std::vector<v1::Game> pool;
  for (int i = 0; i < 256; ++i)
    pool.push_back(harness::make_synthetic_game(static_cast<std::uint64_t>(i), options));
  return pool;
}

// --push-batch (1..`push_batch_max`), --sample, --plies, --target-fraction.
inline void add_game_options(CLI::App& cmd, int& push_batch, int push_batch_max, int& sample_count,
                             int& plies, double& target_fraction) {
  cmd.add_option("--push-batch", push_batch, "games per PushGames call")
      ->check(CLI::Range(1, push_batch_max))
      ->capture_default_str();
  cmd.add_option("--sample", sample_count, "positions per Sample call")
      ->check(CLI::Range(1, 16384))
      ->capture_default_str();
  cmd.add_option("--plies", plies, "length of the synthetic games (at most)")
      ->check(CLI::Range(2, 1024))
      ->capture_default_str();
  cmd.add_option("--target-fraction", target_fraction, "share of moves that are training positions")
      ->check(CLI::Range(0.01, 1.0))
      ->capture_default_str();
}

}  // namespace chessrl::tool

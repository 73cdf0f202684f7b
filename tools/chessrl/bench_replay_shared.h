// What `chessrl bench replay` and `chessrl bench load` share: the private
// redis-server they run against, the synthetic games they push, and the
// options that shape those games and calls. Header-only: both commands are
// built only with the services (CHESSRL_SERVICES).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chessrl/harness/redis_server.h"
#include "chessrl/harness/synthetic_game.h"

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

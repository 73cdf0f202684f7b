// chessrl-selfplay's options: what every flag, CHESSRL_* variable and --config
// key sets (the game settings share their names with `chessrl selfplay`), and
// the values derived from them once parsed. Plain data, but for the
// --acked-log file resolve() opens (shared by copies).
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "chessrl/core/result.h"
#include "chessrl/nn/batch_evaluator.h"
#include "chessrl/nn/model_limits.h"
#include "chessrl/nn/network_config.h"
#include "chessrl/nn/torch_backend.h"
#include "chessrl/runtime/client_options.h"
#include "chessrl/runtime/options.h"
#include "chessrl/selfplay/game_runner.h"
#include "game_pusher.h"

namespace chessrl::selfplay_service {

// The shared option groups (runtime/options.h: --metrics-listen, --replay,
// --device, --concurrent, ...), then self-play's own.
struct Settings : runtime::StatusListenOptions,
                  runtime::ClientOptions,
                  runtime::DeviceOptions,
                  runtime::LayoutOptions {
  Settings() { metrics_listen = "0.0.0.0:9101"; }

  // Who.
  std::string replica;  // empty: the host name

  // Models.
  std::string model;                  // a pinned checkpoint file: no following
  std::string bootstrap = "uniform";  // before any model exists: uniform or net
  std::string net = nn::kDefaultNet;  // --bootstrap net's size
  // How a newer model takes over: "overlap" (new games start on it at once
  // while the games in progress finish on the old one) or "drain" (no game
  // starts until the games in progress have finished; one network at a time).
  std::string model_switch = "overlap";

  // Play (as `chessrl selfplay`).
  // Its seed, max_games, threads and concurrent games are set by resolve().
  selfplay::GameRunnerOptions runner;
  std::uint64_t seed = 0;  // with --seed: fixed (mixed with the replica name)
  bool no_tree_reuse = false;
  std::uint64_t games = 0;  // 0: until stopped

  // Pushing.
  GamePusherOptions push;  // its acked_log is opened by resolve()
  int push_interval_ms = 1000;
  std::string acked_log;  // empty: none
  // Appends one JSON line of selfplay::GameStats per model version played
  // (at each switch and at the end); empty: none.
  std::string version_stats;
  int flush_timeout_s = 10;
  // After a flush that lost games: seconds to wait for a scrape of /metrics
  // that reads chessrl_selfplay_games_lost_total (0: none). 15: in the chart's
  // 30 s grace after the 10 s flush, with room to spare; one whole scrape
  // interval at 15 s, half of one at the chart's default 30 s.
  int final_scrape_wait_s = 15;
  int progress_interval_s = 30;

  // Filled by resolve().
  std::optional<std::uint64_t> fixed_seed;
  nn::TorchBackendOptions torch;
  nn::BatchEvaluatorOptions evaluator;  // without on_batch
  std::optional<nn::NetworkConfig> bootstrap_net;
};

// Registers every option on `app` (config::finish() is the caller's).
void add_options(CLI::App& app, Settings& settings);

// After parsing: checks what CLI11 cannot, fills the defaults that depend on
// others and the derived fields, and, last, opens --acked-log (creating the
// file). Errors name the option.
Result<void> resolve(Settings& settings, const CLI::App& app);

}  // namespace chessrl::selfplay_service

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
#include "chessrl/rpc/security_flags.h"
#include "chessrl/selfplay/game_runner.h"
#include "game_pusher.h"

namespace chessrl::selfplay_service {

struct Settings {
  // Who and where.
  std::string replica;  // empty: the host name
  std::string replay = "127.0.0.1:50051";
  std::string registry;  // empty: --replay
  std::string metrics_listen = "0.0.0.0:9101";
  std::string probe_listen = "off";  // the chart's probes: --probe-listen
  int rpc_deadline_s = 10;
  rpc::ClientSecurityFlags security_flags;  // as given
  rpc::ClientSecurity security;             // read from them by resolve()

  // Models.
  std::string model;                  // a pinned checkpoint file: no following
  std::string bootstrap = "uniform";  // before any model exists: uniform or net
  std::string net = nn::kDefaultNet;  // --bootstrap net's size
  std::string device = "cpu";
  std::string precision = "fp32";
  int nn_threads = 0;
  // Registry and --model checkpoints naming more parameters are refused before
  // anything is allocated (0: no ceiling).
  std::int64_t max_model_params = nn::kDefaultMaxModelParams;
  // How a newer model takes over: "overlap" (new games start on it at once
  // while the games in progress finish on the old one) or "drain" (no game
  // starts until the games in progress have finished; one network at a time).
  std::string model_switch = "overlap";

  // Play (as `chessrl selfplay`).
  selfplay::GameRunnerOptions runner;  // its seed and max_games are set by resolve()
  std::uint64_t seed = 0;              // with --seed: fixed (mixed with the replica name)
  int workers = 0;
  int batch = 0;
  std::size_t cache = 0;
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

// The options of `chessrl local`: what it starts and with which settings.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "chessrl/eval/ladder.h"
#include "local/defaults.h"

namespace chessrl::tool {

struct LocalOptions {
  std::string dir = "run";
  std::string bin_dir;
  int selfplay = 1;
  int trainers = 1;
  // Devices (local/devices.h): --device for every child (unset: each binary's
  // own, auto), or GPU lists: one self-play process per GPU of `gpus`, one
  // trainer rank per GPU of `train_gpus`.
  std::optional<std::string> device;
  std::string gpus, train_gpus;
  // The learning settings are the binaries' own defaults (chessrl-selfplay,
  // chessrl-trainer, chessrl-evaluator, chessrl-replay --help), the same the chart
  // runs with; chessrl local passes one only when it is given here.
  std::optional<std::string> net;
  std::optional<int> visits, reduced_visits;
  std::optional<float> full_fraction;
  std::optional<int> max_plies, adjudicate_material;
  std::optional<float> final_temperature, short_games, draw_contempt;
  std::optional<double> value_q_ratio;
  std::optional<int> batch_size;  // over all ranks; unset: the trainer's own per rank
  std::optional<std::string> optimizer;
  std::optional<double> lr;
  std::optional<int> publish_every, checkpoint_every;
  std::optional<std::uint64_t> min_window;
  std::optional<double> max_reuse;
  std::optional<int> eval_visits, eval_pairs, anchor_pairs;
  std::optional<std::string> anchors;
  std::optional<std::uint64_t> window;  // replay's; unset: chessrl-replay's own
  // What differs by machine: a laptop's self-play process plays this many
  // games at once on its one search thread.
  int concurrent = local_defaults::kConcurrentGames;
  // Search threads (and as many network workers) per self-play process; 0:
  // this machine's cores shared out over the self-play processes. Self-play
  // runs at `selfplay_nice` (setpriority: 0..19), below the trainer and the
  // evaluator, so it takes the cores they leave idle without slowing them.
  int selfplay_threads = 0;
  int selfplay_nice = local_defaults::kSelfplayNice;
  // Redis servers the replay window is spread over (chessrl-replay
  // --redis-shards); 1: one, as the chart's default.
  int redis_shards = 1;
  std::vector<std::string> engines;
  // The Stockfish ladder the evaluator climbs (chessrl-evaluator --ladder):
  // make run plays it by default; "off": none. Without stockfish installed
  // the evaluator says so once and plays the other anchors.
  std::string ladder = eval::kDefaultLadder;
  // More options for the children, as words (split at spaces).
  std::string selfplay_args, trainer_args, evaluator_args;
  bool print_settings = false;  // print the children's settings as JSON and exit
  // The run itself.
  int duration = 0;  // seconds; 0: until Ctrl-C
  double status_every = 2;
  bool quiet = false;
  // Prometheus: scrapes every child; the chart's rules (helm/rules) by default.
  bool no_prometheus = false;
  // The game viewer (chessrl-web): the live games, the matches, the Elo curve.
  bool no_web = false;
  // Bearer tokens on the replay service and registry (run/auth, one per role).
  bool no_auth = false;
  // The replay service's gRPC port on 127.0.0.1; 0: one the kernel picks. Kept
  // across restarts of the replay service either way.
  int port = 0;
  std::string prometheus_rules = std::string(CHESSRL_SOURCE_DIR) + "/helm/rules/chess-rl.yaml";
};

// Adds every option of `chessrl local` to `cmd`, stored in `o`.
void add_local_options(CLI::App& cmd, LocalOptions& o);

}  // namespace chessrl::tool

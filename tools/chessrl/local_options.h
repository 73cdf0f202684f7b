// The options of `chessrl local`: what it starts and with which settings.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "local_defaults.h"

namespace chessrl::tool {

struct LocalOptions {
  std::string dir = "run";
  std::string bin_dir;
  int selfplay = 1;
  int trainers = 1;
  // The network and self-play.
  std::string net = local_defaults::kNet;
  int visits = local_defaults::kFullVisits;
  int reduced_visits = local_defaults::kReducedVisits;
  float full_fraction = local_defaults::kFullFraction;
  int concurrent = local_defaults::kConcurrentGames;
  int max_plies = local_defaults::kMaxPlies;
  int adjudicate_material = local_defaults::kAdjudicateMaterial;
  float final_temperature = local_defaults::kFinalTemperature;
  double value_q_ratio = local_defaults::kValueQRatio;
  float short_games = local_defaults::kShortGames;
  float draw_contempt = local_defaults::kDrawContempt;
  // Replay and training.
  std::uint64_t window = 50000;
  int batch_size = local_defaults::kBatchSize;
  std::string optimizer = "adamw";
  double lr = 1e-3;
  int publish_every = local_defaults::kPublishEvery;
  int checkpoint_every = 100;
  std::uint64_t min_window = 4000;
  double max_reuse = 4;
  // Evaluation.
  int eval_visits = local_defaults::kEvalVisits;
  int eval_pairs = 4;
  int anchor_pairs = 4;
  std::string anchors = "random,greedy";
  std::vector<std::string> engines;
  // More options for the children, as words (split at spaces).
  std::string selfplay_args, trainer_args, evaluator_args;
  // The run itself.
  int duration = 0;  // seconds; 0: until Ctrl-C
  double status_every = 2;
  bool quiet = false;
  // Prometheus: scrapes every child; the chart's rules (helm/rules) by default.
  bool no_prometheus = false;
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

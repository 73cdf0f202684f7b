// The evaluator's settings: one field per command-line option (CLI11; the
// same names as CHESSRL_* variables and --config keys), their checks, and the
// anchor list they describe. Plain data; add_options() binds the fields of a
// Settings object that must outlive the parse.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "chessrl/core/result.h"
#include "chessrl/eval/match.h"
#include "chessrl/nn/model_limits.h"
#include "chessrl/runtime/client_options.h"
#include "chessrl/runtime/options.h"

namespace chessrl::evaluator_service {

// The shared option groups (runtime/options.h: --metrics-listen, --registry,
// --device, ...; no --replay, no --precision), then the evaluator's own.
struct EvaluatorOptions : runtime::StatusListenOptions,
                          runtime::ClientOptions,
                          runtime::DeviceOptions {
  EvaluatorOptions() {
    metrics_listen = "0.0.0.0:9104";
    registry = runtime::kDefaultReplayAddress;
    rpc_deadline_s = 60;  // per registry call attempt
  }

  // Where models come from.
  int poll_s = 5;                               // the idle loop asks the registry this often
  int unhealthy_after_s = 60;  // /healthz says 503 once the registry has failed this long
  // The candidate being gated is leased (LeaseModel) for this long, renewed
  // every quarter of it while its match runs and ended after, so the
  // registry's --keep-models cannot prune it before SetBest (0: no lease).
  int lease_s = 120;

  // The players: MCTS over each model.
  int visits = eval::kEvalVisits;
  int leaves = 8;
  int random_plies = 2;  // plies sampled by visits at the start, so paired games vary

  // The matches.
  int threads = 2;  // games played at once: --concurrent (alias --threads)
  int max_plies = eval::kEvalMaxPlies;
  int pairs = 4;               // gating match: 2 * pairs games against the best
  double promote_score = 0.5;  // promoted when the candidate scores above this
  int anchor_pairs = 4;        // gauntlet: 2 * anchor_pairs games per anchor
  std::string anchors = "random,greedy";
  std::vector<std::string> engines;  // more anchors, each as eval::parse_anchor reads it
  // The Stockfish ladder (chessrl/eval/ladder.h): rungs PROGRAM:SKILL:DEPTH,
  // comma-separated, of which the gauntlet plays the one in play; "" or
  // "off": none.
  std::string ladder;
  int gauntlet_every = 1;            // every N evaluated versions (0: never)
  std::uint64_t seed = 1;

  // What is kept.
  std::string state_dir = "evaluator";
  bool save_models = true;
  // Saved models kept under models/: the first, the best and the newest keep_models
  // (0: every one). Each can be hundreds of MB; the registry has them all.
  int keep_models = 5;

  bool once = false;  // evaluate the latest version, print a JSON line, exit

  // Every anchor spec in order (--anchors split at commas, then --engine),
  // without duplicates.
  std::vector<std::string> anchor_specs() const;
  // Checks ranges, that every anchor spec and the ladder parse, and that no
  // two of them share a label; the error names the option and the spec.
  Result<void> validate() const;
};

// Adds every option to `app` (call chessrl::config::finish after).
void add_options(CLI::App& app, EvaluatorOptions& options);

}  // namespace chessrl::evaluator_service

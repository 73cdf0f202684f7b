// Evaluator: the chessrl-evaluator service minus its main(). For each new
// model version in the registry (the candidate): a gating match against the
// current best (paired openings, colours swapped) with the Elo difference and
// its 95% interval, promotion to `best` when the candidate scores above
// --promote-score, then a gauntlet against fixed anchors (random, greedy, UCI
// engines) and the Stockfish ladder's rung in play (--ladder: the next
// version plays the next rung once one scores at least 0.5; a ladder whose
// engine is not installed is logged once and left out). Results go to the state directory (evaluator_state.h) and the
// metrics; the first version becomes best without a match.
//
// Nothing is written for a match that was stopped or whose promotion failed
// to reach the registry; the version is evaluated again later. The candidate
// is leased from the registry while it is fetched and gated (--lease,
// candidate_lease.h), so the registry's pruning cannot take it mid-match. One thread
// drives an Evaluator; health() may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "chessrl/core/result.h"
#include "chessrl/metrics/registry.h"
#include "chessrl/rpc/clients.h"
#include "candidate_lease.h"
#include "evaluator_ladder.h"
#include "evaluator_metrics.h"
#include "evaluator_options.h"
#include "evaluator_state.h"
#include "model_loader.h"
#include "registry_health.h"

namespace chessrl::evaluator_service {

using Log = std::function<void(const std::string&)>;

// A log line on stderr, prefixed "chessrl-evaluator: ".
void log_to_stderr(const std::string& line);

struct Evaluation {
  enum class Outcome {
    kDone,     // evaluated (or skipped as unusable); progress saved
    kStopped,  // the stop flag was raised; nothing of this version written
    kRetry,    // the registry failed; try this version again later
    kFatal,    // a configuration or disk error: the service should stop
  };
  Outcome outcome = Outcome::kDone;
  EvaluationReport report;
  std::string error;  // for kRetry and kFatal
};

class Evaluator {
 public:
  // Opens the state directory and reads the progress saved there. Fails on
  // options that do not validate or a state directory it cannot use.
  static Result<std::unique_ptr<Evaluator>> create(EvaluatorOptions options,
                                                   metrics::Registry& registry,
                                                   Log log = log_to_stderr);
  ~Evaluator();
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  // Evaluates `version` now (whether or not it is the newest).
  Evaluation evaluate(std::uint64_t version, const std::atomic<bool>& stop);
  // The latest published version, unless it was evaluated already (then a
  // report with evaluated = false and a note).
  Evaluation evaluate_latest(const std::atomic<bool>& stop);
  // The service: watches the registry and evaluates the newest version not
  // yet evaluated (skipping older ones it has not reached), until `stop`.
  // Registry failures are retried forever; fails only on a fatal error.
  Result<void> run(const std::atomic<bool>& stop);

  // "" when healthy, else why not (for /healthz).
  std::string health() const { return health_.reason(); }
  std::uint64_t last_evaluated() const { return last_evaluated_.load(); }
  const EvaluatorOptions& options() const { return options_; }
  // The Stockfish ladder (inactive when off or its engine was not found).
  const EvaluatorLadder& ladder() const { return ladder_; }

 private:
  Evaluator(EvaluatorOptions options, StateDir state, EvaluatorProgress progress,
            metrics::Registry& registry, Log log);

  // Steps of evaluate(); each returns false (with `out` set) to end it.
  bool load_candidate(std::uint64_t version, std::shared_ptr<LoadedModel>& candidate,
                      Evaluation& out);
  bool gate(const std::shared_ptr<LoadedModel>& candidate, const std::atomic<bool>& stop,
            Evaluation& out);
  bool gauntlet(LoadedModel& candidate, const std::atomic<bool>& stop, Evaluation& out);
  // The best model, loaded unless it is the one already held (then no model).
  LoadResult best_model(std::uint64_t version);
  bool save_progress(Evaluation& out);
  // Deletes saved models beyond the first, the best and the newest --keep-models; a
  // failure is logged, never fatal.
  void prune_models(std::uint64_t best);

  eval::MctsPlayerOptions player_options(std::uint64_t seed) const;
  eval::MatchOptions match_options(int pairs, std::uint64_t seed, std::string event) const;
  ModelLoaderOptions loader_options(std::uint64_t version, bool save) const;
  // Registry calls report here (for health() and one log line per outage).
  void registry_ok();
  void registry_failed(const std::string& error);

  EvaluatorOptions options_;
  StateDir state_;
  EvaluatorProgress progress_;
  std::atomic<std::uint64_t> last_evaluated_{0};
  std::atomic<std::uint64_t> newest_{0};
  EvaluatorMetrics metrics_;
  Log log_;
  RegistryHealth health_;
  std::unique_ptr<rpc::ModelRegistryClient> registry_;
  // The watch stream's own client: a short reconnect backoff, so a stop is
  // noticed within about a second while the registry is down.
  std::unique_ptr<rpc::ModelRegistryClient> watch_client_;
  // Set once the registry answered LeaseModel with UNIMPLEMENTED.
  std::atomic<bool> lease_unsupported_{false};
  std::shared_ptr<LoadedModel> best_;  // kept across evaluations
  EvaluatorLadder ladder_;  // its rung is saved with progress_
  std::uint64_t evaluated_here_ = 0;   // versions evaluated by this process (for --gauntlet-every)
};

}  // namespace chessrl::evaluator_service

// EvaluatorMetrics: the evaluator's Prometheus series. Opponent labels are
// "best" (the gating match), the anchors' labels and the ladder's rungs', a
// set fixed at start-up, so they stay bounded. Thread-safe (the series are atomics).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chessrl/eval/match.h"
#include "chessrl/metrics/registry.h"

namespace chessrl::evaluator_service {

class EvaluatorMetrics {
 public:
  explicit EvaluatorMetrics(metrics::Registry& registry);

  // A finished match of the candidate against `opponent` (scores from the
  // candidate's side, which played first): the Elo gauges, games by result,
  // forfeits by side, the match count and its time.
  void on_match(const std::string& opponent, const eval::MatchResult& result, double seconds);
  void on_evaluated(std::uint64_t version) { model_version.set(static_cast<double>(version)); }
  void on_best(std::uint64_t version, bool promoted);
  // The ladder's rungs (their labels) and the one in play: chessrl_eval_ladder_rung
  // (1 for the first rung, 0 for no ladder) and chessrl_eval_ladder_in_play
  // {opponent=<label>} (1 for the rung in play, 0 for the others).
  void on_ladder(const std::vector<std::string>& labels, std::size_t in_play);

  metrics::Counter& matches_total;
  metrics::Counter& promotions_total;
  metrics::Counter& match_seconds_total;
  metrics::Counter& models_refused_total;  // versions nn::check_model refused
  metrics::Gauge& model_version;
  metrics::Gauge& best_version;
  metrics::Gauge& ladder_rung;

 private:
  metrics::Registry& registry_;
};

}  // namespace chessrl::evaluator_service

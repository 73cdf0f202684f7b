#include "evaluator_metrics.h"

namespace chessrl::evaluator_service {

EvaluatorMetrics::EvaluatorMetrics(metrics::Registry& registry)
    : matches_total(
          registry.counter("chessrl_eval_matches_total", "Matches finished (gating and gauntlet)")),
      promotions_total(
          registry.counter("chessrl_eval_promotions_total",
                           "Candidates that became best (the first version included)")),
      match_seconds_total(
          registry.counter("chessrl_eval_match_seconds_total", "Wall time spent in matches")),
      models_refused_total(registry.counter(
          "chessrl_eval_models_refused_total",
          "Model versions refused before loading: over --max-model-params, or weights that do "
          "not match the architecture they name (skipped, never fetched again)")),
      model_version(registry.gauge("chessrl_model_version", "Model version last evaluated")),
      best_version(registry.gauge("chessrl_eval_best_version",
                                  "The registry's best version as the evaluator last saw it")),
      ladder_rung(registry.gauge(
          "chessrl_eval_ladder_rung",
          "The Stockfish ladder's rung in play, 1 for the first (0: no ladder, or no engine)")),
      registry_(registry) {}

void EvaluatorMetrics::on_match(const std::string& opponent, const eval::MatchResult& result,
                                double seconds) {
  const metrics::Labels labels{{"opponent", opponent}};
  const eval::EloEstimate elo = result.elo();
  registry_.gauge("chessrl_eval_elo", "Elo of the latest candidate minus the opponent's", labels)
      .set(elo.elo);
  registry_.gauge("chessrl_eval_elo_lower", "Lower end of chessrl_eval_elo's 95% interval", labels)
      .set(elo.lower);
  registry_.gauge("chessrl_eval_elo_upper", "Upper end of chessrl_eval_elo's 95% interval", labels)
      .set(elo.upper);
  registry_
      .gauge("chessrl_eval_score", "The latest candidate's score against the opponent (0-1)",
             labels)
      .set(result.score.score());
  const char* games_help = "Games played, by result from the candidate's side";
  const auto games = [&](const char* outcome) -> metrics::Counter& {
    return registry_.counter("chessrl_eval_games_total", games_help,
                             {{"opponent", opponent}, {"result", outcome}});
  };
  // Series for all three results exist from the first match, so rates work.
  games("win").inc(result.score.wins);
  games("draw").inc(result.score.draws);
  games("loss").inc(result.score.losses);
  const char* forfeit_help = "Games lost by forfeit (a crash, a timeout, an illegal move), by side";
  int candidate_forfeits = 0, opponent_forfeits = 0;
  for (const auto& game : result.games) {
    if (game.forfeit.empty()) continue;
    (game.first_score < 0.5 ? candidate_forfeits : opponent_forfeits) += 1;
  }
  registry_
      .counter("chessrl_eval_forfeits_total", forfeit_help,
               {{"opponent", opponent}, {"side", "candidate"}})
      .inc(candidate_forfeits);
  registry_
      .counter("chessrl_eval_forfeits_total", forfeit_help,
               {{"opponent", opponent}, {"side", "opponent"}})
      .inc(opponent_forfeits);
  matches_total.inc();
  if (seconds > 0) match_seconds_total.inc(seconds);
}

void EvaluatorMetrics::on_best(std::uint64_t version, bool promoted) {
  best_version.set(static_cast<double>(version));
  if (promoted) promotions_total.inc();
}

}  // namespace chessrl::evaluator_service

namespace chessrl::evaluator_service {

void EvaluatorMetrics::on_ladder(const std::vector<std::string>& labels, std::size_t in_play) {
  ladder_rung.set(labels.empty() ? 0.0 : static_cast<double>(in_play + 1));
  for (std::size_t i = 0; i < labels.size(); ++i) {
    registry_
        .gauge("chessrl_eval_ladder_in_play",
               "1 for the Stockfish ladder's rung in play (its opponent label), 0 for the others",
               {{"opponent", labels[i]}})
        .set(i == in_play ? 1.0 : 0.0);
  }
}

}  // namespace chessrl::evaluator_service

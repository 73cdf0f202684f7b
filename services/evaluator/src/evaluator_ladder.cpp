#include "evaluator_ladder.h"

#include <cstdio>
#include <utility>

namespace chessrl::evaluator_service {
namespace {

std::string rung_of(std::size_t rung, std::size_t count) {
  return "rung " + std::to_string(rung + 1) + " of " + std::to_string(count);
}

}  // namespace

EvaluatorLadder::EvaluatorLadder(const std::string& ladder, const std::string& saved_rung,
                                 EvaluatorMetrics& metrics, Log log)
    : metrics_(metrics), log_(std::move(log)) {
  auto parsed = eval::parse_ladder(ladder);
  if (!parsed.ok() || parsed->empty()) {
    publish();
    return;
  }
  auto resolved = eval::resolve_ladder(std::move(parsed).value());
  if (!resolved.ok()) {
    // Said once, here; the gauntlet then plays as if no --ladder were given.
    log_(resolved.error() + ": the Stockfish ladder (--ladder " + ladder +
         ") is off, the other anchors play (Debian's stockfish package installs it: "
         "scripts/install-deps.sh)");
    publish();
    return;
  }
  rungs_ = std::move(resolved).value();
  if (!saved_rung.empty()) {
    rung_ = eval::rung_index(rungs_, saved_rung);
    if (rung_ == rungs_.size()) {
      log_("the saved ladder rung '" + saved_rung + "' is not on --ladder " + ladder +
           ": starting at its first rung");
      rung_ = 0;
    }
  }
  std::string names;
  for (const auto& r : rungs_) names += (names.empty() ? "" : ", ") + r.label;
  log_("the ladder: " + names + "; in play: " + in_play().label + " (" +
       rung_of(rung_, rungs_.size()) + ")");
  publish();
}

bool EvaluatorLadder::record(std::uint64_t version, double score) {
  const std::size_t next = eval::next_rung(rung_, rungs_.size(), score);
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", score);
  const std::string scored =
      "v" + std::to_string(version) + " scored " + text + " against " + in_play().label;
  if (next == rung_) {
    if (score >= eval::kLadderStepScore) log_(scored + ", the ladder's top rung");
    return false;
  }
  rung_ = next;
  publish();
  log_(scored + ": the ladder moves up to " + in_play().label + " (" +
       rung_of(rung_, rungs_.size()) + ")");
  return true;
}

void EvaluatorLadder::publish() {
  std::vector<std::string> labels;
  for (const auto& r : rungs_) labels.push_back(r.label);
  metrics_.on_ladder(labels, rung_);
}

}  // namespace chessrl::evaluator_service

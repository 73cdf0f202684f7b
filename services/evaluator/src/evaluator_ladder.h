// The Stockfish ladder as the evaluator climbs it (--ladder, chessrl/eval/ladder.h):
// the rungs with their engine found, the one in play, the move up one rung
// once a version scores at least eval::kLadderStepScore against it, and the
// metrics (chessrl_eval_ladder_rung, chessrl_eval_ladder_in_play). The rung in
// play is saved by its label in state.json (EvaluatorProgress::ladder_rung),
// so a restart resumes there. When the engine is not found the ladder is off
// and says so once; the evaluator's other anchors play as before. One thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "chessrl/eval/ladder.h"
#include "evaluator_metrics.h"

namespace chessrl::evaluator_service {

class EvaluatorLadder {
 public:
  using Log = std::function<void(const std::string&)>;

  // `ladder` is --ladder (validated: it parses), `saved_rung` the label
  // state.json kept ("" for none). Logs once: the rungs and the one in play,
  // or that the engine is not installed (the ladder is then off), or that the
  // saved rung is not on this ladder (then it starts at the first).
  EvaluatorLadder(const std::string& ladder, const std::string& saved_rung,
                  EvaluatorMetrics& metrics, Log log);

  bool active() const { return !rungs_.empty(); }
  const std::vector<eval::LadderRung>& rungs() const { return rungs_; }
  // Preconditions for these two: active().
  std::size_t rung() const { return rung_; }
  const eval::LadderRung& in_play() const { return rungs_[rung_]; }
  // The label to keep in state.json ("" when off).
  std::string saved_label() const { return active() ? in_play().label : std::string(); }

  // `version` scored `score` against in_play(): moves up one rung at
  // kLadderStepScore, logging it. True when the rung changed. Precondition:
  // active().
  bool record(std::uint64_t version, double score);

 private:
  void publish();

  EvaluatorMetrics& metrics_;
  Log log_;
  std::vector<eval::LadderRung> rungs_;
  std::size_t rung_ = 0;
};

}  // namespace chessrl::evaluator_service

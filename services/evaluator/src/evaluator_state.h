// What the evaluator keeps on disk under its state directory:
//   state.json              the last evaluated and gated versions (a restart
//                           goes on after them) and the ladder's rung in
//                           play, written atomically
//   results.jsonl           one JSON line per match
//   pgn/match-v<C>-v<B>.pgn the gating match, pgn/gauntlet-v<C>.pgn the anchors
//   models/model-v<N>.chrl  evaluated models (with --save-models): the first,
//                           the best and the newest --keep-models, others pruned
// Not thread-safe: one evaluator owns a directory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chessrl/core/files.h"
#include "chessrl/core/result.h"
#include "chessrl/eval/elo.h"

namespace chessrl::evaluator_service {

struct EvaluatorProgress {
  std::uint64_t last_evaluated = 0;  // every step done for versions up to here
  std::uint64_t last_gated = 0;      // the gating match (or first promotion) is done
  // The label of the ladder's rung in play ("": the first rung, or no ladder).
  std::string ladder_rung;
};

// One line of results.jsonl.
struct MatchRecord {
  std::int64_t time_ms = 0;  // when the match ended, unix milliseconds
  std::uint64_t candidate = 0;
  std::string opponent;                // "best" or the anchor's label
  std::uint64_t opponent_version = 0;  // the best's version (0 for anchors)
  eval::MatchScore score;              // the candidate's
  eval::EloEstimate elo;
  int forfeits = 0;
  bool promoted = false;
  double seconds = 0;
  std::string pgn;  // the file its games are in
};

// {"time":"2024-05-01T12:00:00.000Z","candidate":7,"opponent":"best",...}
std::string to_json_line(const MatchRecord& record);

// What one evaluation did (the --once JSON line).
struct EvaluationReport {
  std::uint64_t candidate = 0;    // 0: nothing was published
  bool evaluated = false;         // false: nothing to do (see note)
  std::uint64_t best_before = 0;  // 0: there was no best
  std::uint64_t best_after = 0;
  bool promoted = false;
  std::string note;                  // why there was no gating match, when there was none
  std::vector<MatchRecord> matches;  // the gating match first, then the anchors
  std::vector<std::string> skipped;  // "<anchor>: <why it did not play>"
  std::string ladder_rung;           // the ladder's rung in play after it ("": no ladder)
  double seconds = 0;
};
// {"candidate":7,"evaluated":true,"best_before":5,"best":7,"promoted":true,
//  "note":"","matches":[...results.jsonl objects...],"skipped":[],
//  "ladder_rung":"stockfish-skill0","seconds":12.5} (ladder_rung only with a ladder)
std::string to_json_line(const EvaluationReport& report);
// "v7 vs best v5: +5 =8 -3 score 0.563 elo +43.7 [-58.2, +150.1] (16 games)"
std::string describe(const MatchRecord& record);

class StateDir {
 public:
  // Creates the directory (and pgn/, models/) if needed; errors name the path.
  static Result<StateDir> open(const std::string& path);

  // The saved progress; zeros when there is none yet. Fails on a file that
  // does not parse (naming it) rather than redoing everything silently.
  Result<EvaluatorProgress> load_progress() const;
  Result<void> save_progress(const EvaluatorProgress& progress) const;
  Result<void> append_result(const MatchRecord& record) const;

  const std::string& path() const { return path_; }
  std::string results_path() const { return path_ + "/results.jsonl"; }
  std::string match_pgn_path(std::uint64_t candidate, std::uint64_t best) const;
  std::string gauntlet_pgn_path(std::uint64_t candidate) const;
  std::string model_path(std::uint64_t version) const;
  // Deletes the saved models (models/model-v<N>.chrl) other than the lowest
  // version (the run's first), `best` and the `keep_newest` highest
  // versions; keep_newest 0 deletes nothing. Other files are left alone.
  // Returns the versions deleted, lowest first; the error names a file that
  // could not be listed or deleted.
  Result<std::vector<std::uint64_t>> prune_models(std::size_t keep_newest,
                                                  std::uint64_t best) const;

 private:
  explicit StateDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

using chessrl::write_file_atomically;  // chessrl/core/files.h

}  // namespace chessrl::evaluator_service

// What self-play does with a search: which move to play (temperature), how
// many visits a move gets and whether it becomes a training target (playout
// cap randomization), and when a side gives up (resignation). Small value
// types; not thread-safe, one per game.
#pragma once

#include <cstdint>

#include "chessrl/chess/types.h"
#include "chessrl/core/result.h"
#include "chessrl/mcts/random.h"
#include "chessrl/mcts/search.h"

namespace chessrl::mcts {

// Temperature by move number: `initial` for the first `plies` plies of the
// game, then `final`. 0 plays the best move.
struct TemperatureSchedule {
  float initial = 1.0f;
  int plies = 30;
  float final = 0.0f;
  float at(int ply) const { return ply < plies ? initial : final; }
  Result<void> validate() const;
};

// Samples a root move with probability proportional to visits^(1/temperature).
// Forced wins are always played; forced losses only when nothing else is
// left. temperature <= 0 (or a root without visited children) gives best_move().
chess::Move choose_move(const Search& search, float temperature, Rng& rng);

// Playout cap randomization (KataGo): a fraction of moves are searched with
// `full_visits` and recorded as training targets; the rest get
// `reduced_visits`, are played quickly and not recorded. full_fraction = 1
// (or reduced_visits = full_visits) searches every move fully.
struct PlayoutCap {
  int full_visits = 400;
  int reduced_visits = 100;
  float full_fraction = 0.25f;

  struct Draw {
    int visits;
    bool full;
  };
  Draw draw(Rng& rng) const;
  Result<void> validate() const;
};

// Resignation: a side resigns when its root value stays below `threshold` on
// `consecutive` of its own moves in a row. In a `disabled_fraction` of games
// nobody resigns: they play on and record when a side would have, so the
// false-positive rate (it would have resigned but did not lose) can be measured.
struct ResignPolicy {
  float threshold = -0.9f;  // in [-1, 1]; -1 or below disables resignation
  int consecutive = 3;
  float disabled_fraction = 0.1f;
  bool enabled() const { return threshold > -1.0f; }
  Result<void> validate() const;
};

// One game's resignation state.
class ResignTracker {
 public:
  ResignTracker(const ResignPolicy& policy, bool disabled_in_this_game)
      : policy_(policy), disabled_(disabled_in_this_game) {}
  // After the search for `side`'s move at `ply`, with its root value. Returns
  // true when `side` resigns now (never in a disabled game, which instead
  // remembers the first time it would have).
  bool update(chess::Color side, float root_value, int ply);
  bool disabled() const { return disabled_; }
  // In a disabled game: whether and where a side would first have resigned.
  bool would_have_resigned() const { return would_ply_ >= 0; }
  chess::Color would_have_resigned_side() const { return would_side_; }
  int would_have_resigned_ply() const { return would_ply_; }

 private:
  ResignPolicy policy_;
  bool disabled_;
  int below_[2] = {0, 0};
  int would_ply_ = -1;
  chess::Color would_side_ = chess::kWhite;
};

}  // namespace chessrl::mcts

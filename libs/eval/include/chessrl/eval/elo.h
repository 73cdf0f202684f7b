// Match statistics: a score from wins, draws and losses (and, for paired
// games, the pentanomial counts of pair scores), the Elo difference it implies
// with a 95% confidence interval, and a sequential probability ratio test.
// Plain functions of counts; thread-safe.
#pragma once

#include <array>
#include <string>

namespace chessrl::eval {

// Counts from the first player's point of view.
struct MatchScore {
  int wins = 0, draws = 0, losses = 0;
  // Paired games (the same opening, colours swapped): pairs[k] counts pairs in
  // which the first player scored k/2 points (0, 0.5, 1, 1.5, 2). All zero
  // when the games were not played in pairs.
  std::array<int, 5> pairs{};

  int games() const { return wins + draws + losses; }
  int paired() const;    // number of pairs counted
  double score() const;  // (wins + draws / 2) / games; 0.5 with no games
  void add(const MatchScore& other);
};

struct EloEstimate {
  double elo = 0;    // the first player's rating minus the second's
  double lower = 0;  // 95% interval
  double upper = 0;
  double score = 0.5;
  int games = 0;
  // "+35.2 ± 41.0 (score 0.550, 40 games)".
  std::string to_string() const;
};

// The Elo difference for an expected score in (0, 1): -400 log10(1/s - 1),
// clamped to +-kMaxElo (so a score of 0 or 1 gives -kMaxElo or +kMaxElo).
double elo_from_score(double score);
inline constexpr double kMaxElo = 1200;

// Elo with a 95% interval from the score's standard error: from the variance
// of pair scores when pairs are counted (pentanomial: pairs share an opening,
// so this is the honest error), else from the per-game trinomial variance;
// the interval is elo_from_score(score +- 1.96 standard errors). Games outside
// a complete pair (a stopped match) count in the score, not the variance.
// A perfect or zero score is shrunk by half a game so the estimate stays
// finite; bounds are clamped to +-kMaxElo. No games: all zero, score 0.5.
EloEstimate estimate_elo(const MatchScore& score);

// Log-likelihood ratio of H1 (elo = elo1) against H0 (elo = elo0) for the
// observed score (the normal approximation used by fishtest, on pairs when
// counted, else on games): N / (2 var) * ((s - s0)^2 - (s - s1)^2), with s
// the score, var its per-pair (or per-game) variance, floored at 1e-4 so a run
// of identical results stays finite, and s0, s1 the logistic expected scores
// of elo0, elo1. 0 with no games. Stop when it leaves (lower, upper):
//   lower = log(beta / (1 - alpha)), upper = log((1 - beta) / alpha).
double sprt_llr(const MatchScore& score, double elo0, double elo1);

struct SprtBounds {
  double lower, upper;
};
SprtBounds sprt_bounds(double alpha = 0.05, double beta = 0.05);

}  // namespace chessrl::eval

#include "chessrl/eval/elo.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace chessrl::eval {
namespace {

constexpr double kZ95 = 1.959963984540054;  // two-sided 95% normal quantile

// Expected score for an Elo difference (the logistic model).
double score_from_elo(double elo) { return 1.0 / (1.0 + std::pow(10.0, -elo / 400.0)); }

// The mean and per-unit variance of a score, and how many units it is over:
// pairs (each unit the pair's points / 2) when pairs are counted, else games.
// A perfect or zero result is shrunk by half a game (one win or one pair's
// second win becomes a draw) so the estimate stays finite.
struct Sample {
  double mean = 0.5;
  double variance = 0;
  double units = 0;
};

Sample sample_of(const MatchScore& s) {
  Sample out;
  if (s.paired() > 0) {
    std::array<double, 5> p{};
    for (int k = 0; k < 5; ++k) p[k] = s.pairs[k];
    const double n = std::accumulate(p.begin(), p.end(), 0.0);
    if (p[4] == n) {
      p[4] -= 1;
      p[3] += 1;
    } else if (p[0] == n) {
      p[0] -= 1;
      p[1] += 1;
    }
    double mean = 0;
    for (int k = 0; k < 5; ++k) mean += p[k] * (k / 4.0);
    mean /= n;
    double var = 0;
    for (int k = 0; k < 5; ++k) var += p[k] * (k / 4.0 - mean) * (k / 4.0 - mean);
    out.variance = var / n;
    out.units = n;
    // The centre is the score over all games (an unpaired game of a stopped
    // match counts there), shrunk the same way.
    const double games = s.games();
    double points = s.wins + s.draws / 2.0;
    if (points == games) points -= 0.5;
    if (points == 0) points = 0.5;
    out.mean = points / games;
    return out;
  }
  double w = s.wins, d = s.draws, l = s.losses;
  const double n = w + d + l;
  if (n == 0) return out;
  if (w == n) {
    w -= 1;
    d += 1;
  } else if (l == n) {
    l -= 1;
    d += 1;
  }
  const double mean = (w + d / 2) / n;
  out.mean = mean;
  out.variance =
      (w * (1 - mean) * (1 - mean) + d * (0.5 - mean) * (0.5 - mean) + l * mean * mean) / n;
  out.units = n;
  return out;
}

}  // namespace

int MatchScore::paired() const { return std::accumulate(pairs.begin(), pairs.end(), 0); }

double MatchScore::score() const {
  const int n = games();
  return n == 0 ? 0.5 : (wins + draws / 2.0) / n;
}

void MatchScore::add(const MatchScore& other) {
  wins += other.wins;
  draws += other.draws;
  losses += other.losses;
  for (std::size_t k = 0; k < pairs.size(); ++k) pairs[k] += other.pairs[k];
}

std::string EloEstimate::to_string() const {
  char text[128];
  std::snprintf(text, sizeof text, "%+.1f ± %.1f (score %.3f, %d games)", elo, (upper - lower) / 2,
                score, games);
  return text;
}

double elo_from_score(double score) {
  if (!(score > 0)) return -kMaxElo;
  if (score >= 1) return kMaxElo;
  // + 0.0: an even score is 0, not -0 ("-0.0" in a report).
  return std::clamp(-400.0 * std::log10(1.0 / score - 1.0), -kMaxElo, kMaxElo) + 0.0;
}

EloEstimate estimate_elo(const MatchScore& score) {
  EloEstimate e;
  e.games = score.games();
  if (e.games == 0) return e;
  e.score = score.score();
  const Sample s = sample_of(score);
  const double se = std::sqrt(s.variance / s.units);
  e.elo = elo_from_score(s.mean);
  e.lower = elo_from_score(s.mean - kZ95 * se);
  e.upper = elo_from_score(s.mean + kZ95 * se);
  return e;
}

double sprt_llr(const MatchScore& score, double elo0, double elo1) {
  if (score.games() == 0) return 0;
  const Sample s = sample_of(score);
  // A run of identical results has no spread; a floor keeps the ratio finite
  // (a per-unit standard deviation of 0.01, far below any real match's).
  const double var = std::max(s.variance, 1e-4);
  const double s0 = score_from_elo(elo0), s1 = score_from_elo(elo1);
  return s.units / (2 * var) * ((s.mean - s0) * (s.mean - s0) - (s.mean - s1) * (s.mean - s1));
}

SprtBounds sprt_bounds(double alpha, double beta) {
  return {std::log(beta / (1 - alpha)), std::log((1 - beta) / alpha)};
}

}  // namespace chessrl::eval

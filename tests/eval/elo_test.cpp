#include "chessrl/eval/elo.h"

#include <gtest/gtest.h>

#include <cmath>

namespace chessrl::eval {
namespace {

MatchScore wdl(int w, int d, int l) {
  MatchScore s;
  s.wins = w;
  s.draws = d;
  s.losses = l;
  return s;
}

TEST(Elo, FromScoreKnownValues) {
  EXPECT_NEAR(elo_from_score(0.75), 190.85, 0.01);
  EXPECT_DOUBLE_EQ(elo_from_score(0.5), 0.0);
  EXPECT_FALSE(std::signbit(elo_from_score(0.5)));  // prints as 0.0, not -0.0
  EXPECT_NEAR(elo_from_score(0.7), 147.19, 0.01);
  for (double s : {0.01, 0.2, 0.37, 0.64, 0.9})
    EXPECT_NEAR(elo_from_score(s), -elo_from_score(1 - s), 1e-9) << s;
  EXPECT_DOUBLE_EQ(elo_from_score(1.0), kMaxElo);
  EXPECT_DOUBLE_EQ(elo_from_score(0.0), -kMaxElo);
  EXPECT_DOUBLE_EQ(elo_from_score(1e-300), -kMaxElo);  // clamped, not -inf
}

TEST(Elo, MatchScoreCounts) {
  MatchScore s = wdl(3, 2, 1);
  EXPECT_EQ(s.games(), 6);
  EXPECT_NEAR(s.score(), 4.0 / 6, 1e-12);
  EXPECT_EQ(s.paired(), 0);
  EXPECT_DOUBLE_EQ(MatchScore{}.score(), 0.5);
  MatchScore t = wdl(1, 0, 1);
  t.pairs = {0, 0, 1, 0, 0};
  s.add(t);
  EXPECT_EQ(s.wins, 4);
  EXPECT_EQ(s.losses, 2);
  EXPECT_EQ(s.games(), 8);
  EXPECT_EQ(s.paired(), 1);
}

TEST(Elo, NoGamesIsAllZero) {
  const EloEstimate e = estimate_elo({});
  EXPECT_EQ(e.games, 0);
  EXPECT_EQ(e.elo, 0);
  EXPECT_EQ(e.lower, 0);
  EXPECT_EQ(e.upper, 0);
  EXPECT_EQ(e.score, 0.5);
  EXPECT_EQ(sprt_llr({}, 0, 10), 0);
}

TEST(Elo, TrinomialIntervalKnownValues) {
  // 6 wins, 2 draws, 2 losses: score 0.7, per-game variance 0.16, se 0.1265.
  const EloEstimate e = estimate_elo(wdl(6, 2, 2));
  EXPECT_EQ(e.games, 10);
  EXPECT_NEAR(e.score, 0.7, 1e-12);
  EXPECT_NEAR(e.elo, 147.19, 0.01);
  EXPECT_NEAR(e.lower, -33.40, 0.01);
  EXPECT_NEAR(e.upper, 504.03, 0.01);
  EXPECT_EQ(e.to_string(), "+147.2 ± 268.7 (score 0.700, 10 games)");
}

TEST(Elo, PentanomialUsesPairVariance) {
  // Every pair is one win and one loss (each side wins with White): the
  // games alone look noisy, but the pairs are all even, so the error is 0.
  MatchScore s = wdl(10, 0, 10);
  const EloEstimate games = estimate_elo(s);
  EXPECT_GT(games.upper - games.lower, 100);
  s.pairs = {0, 0, 10, 0, 0};
  const EloEstimate pairs = estimate_elo(s);
  EXPECT_DOUBLE_EQ(pairs.elo, 0);
  EXPECT_NEAR(pairs.upper - pairs.lower, 0, 1e-9);

  // Pairs that mostly split but sometimes win both: narrower than per game.
  MatchScore t = wdl(12, 0, 8);
  t.pairs = {0, 0, 8, 0, 2};
  const EloEstimate tp = estimate_elo(t), tg = estimate_elo(wdl(12, 0, 8));
  EXPECT_NEAR(tp.elo, tg.elo, 1e-9);
  EXPECT_LT(tp.upper - tp.lower, tg.upper - tg.lower);
  EXPECT_LT(tp.lower, tp.elo);
  EXPECT_GT(tp.upper, tp.elo);
}

TEST(Elo, PerfectScoreStaysFinite) {
  const EloEstimate e = estimate_elo(wdl(10, 0, 0));
  EXPECT_NEAR(e.elo, 511.50, 0.01);  // shrunk to 9.5 / 10
  EXPECT_LT(e.lower, e.elo);
  EXPECT_LE(e.upper, kMaxElo);
  EXPECT_DOUBLE_EQ(e.score, 1.0);
  const EloEstimate z = estimate_elo(wdl(0, 0, 10));
  EXPECT_NEAR(z.elo, -511.50, 0.01);
  MatchScore paired = wdl(8, 0, 0);
  paired.pairs = {0, 0, 0, 0, 4};
  const EloEstimate p = estimate_elo(paired);
  EXPECT_NEAR(p.elo, elo_from_score(7.5 / 8), 1e-9);
  EXPECT_LT(p.lower, p.elo);
  EXPECT_TRUE(std::isfinite(p.lower) && std::isfinite(p.upper));
}

TEST(Elo, SprtBounds) {
  const SprtBounds b = sprt_bounds(0.05, 0.05);
  EXPECT_NEAR(b.lower, -2.944, 0.001);
  EXPECT_NEAR(b.upper, 2.944, 0.001);
  const SprtBounds c = sprt_bounds(0.05, 0.1);
  EXPECT_NEAR(c.lower, std::log(0.1 / 0.95), 1e-12);
  EXPECT_NEAR(c.upper, std::log(0.9 / 0.05), 1e-12);
}

TEST(Elo, SprtDecidesStrongEvenAndBadResults) {
  const SprtBounds b = sprt_bounds();
  // H0: elo 0, H1: elo 50.
  const double strong = sprt_llr(wdl(60, 20, 20), 0, 50);
  const double even = sprt_llr(wdl(40, 20, 40), 0, 50);
  const double bad = sprt_llr(wdl(20, 20, 60), 0, 50);
  EXPECT_GT(strong, b.upper);
  EXPECT_GT(even, b.lower);
  EXPECT_LT(even, b.upper);
  EXPECT_LT(bad, b.lower);
  // The normal approximation by hand for the even result: variance 0.2,
  // s0 = 0.5, s1 = 1 / (1 + 10^(-50/400)).
  const double s1 = 1 / (1 + std::pow(10.0, -50.0 / 400));
  EXPECT_NEAR(even, 100 / (2 * 0.2) * (0 - (0.5 - s1) * (0.5 - s1)), 1e-9);
  // More of the same evidence moves the ratio further.
  EXPECT_GT(sprt_llr(wdl(120, 40, 40), 0, 50), strong);
  // Pairs: the pentanomial variance is used.
  MatchScore paired = wdl(60, 20, 20);
  paired.pairs = {2, 4, 10, 20, 14};  // 70 points, as the games
  EXPECT_GT(sprt_llr(paired, 0, 50), 0);
}

}  // namespace
}  // namespace chessrl::eval

#include "chessrl/mcts/policies.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "chessrl/mcts/random.h"

namespace chessrl::mcts {
namespace {

TEST(Rng, SameSeedSameSequenceAndUniformRange) {
  Rng a(5), b(5), c(6);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next(), b.next());
  EXPECT_NE(Rng(5).next(), c.next());
  double sum = 0;
  for (int i = 0; i < 100000; ++i) {
    const double u = a.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / 100000, 0.5, 0.01);
}

TEST(Rng, GammaAndDirichletHaveTheRightMoments) {
  Rng rng(11);
  for (double shape : {0.3, 1.0, 2.5}) {
    double sum = 0;
    const int n = 200000;
    for (int i = 0; i < n; ++i) sum += rng.gamma(shape);
    EXPECT_NEAR(sum / n, shape, 0.02 * shape + 0.01) << shape;  // mean of Gamma(k, 1) is k
  }
  float x[30];
  double first = 0;
  for (int i = 0; i < 5000; ++i) {
    rng.dirichlet(0.3, x);
    double s = 0;
    for (float v : x) s += v;
    ASSERT_NEAR(s, 1.0, 1e-5);
    first += x[0];
  }
  EXPECT_NEAR(first / 5000, 1.0 / 30, 0.006);  // each component's mean is 1/k
}

TEST(PlayoutCap, FullFractionIsHonoured) {
  PlayoutCap cap{.full_visits = 400, .reduced_visits = 80, .full_fraction = 0.25f};
  Rng rng(1);
  int full = 0;
  for (int i = 0; i < 20000; ++i) {
    const auto d = cap.draw(rng);
    EXPECT_EQ(d.visits, d.full ? 400 : 80);
    full += d.full;
  }
  EXPECT_NEAR(full / 20000.0, 0.25, 0.015);
  cap.full_fraction = 1;
  EXPECT_TRUE(cap.draw(rng).full);
  cap.full_fraction = 0;
  EXPECT_FALSE(cap.validate());
}

TEST(Temperature, ScheduleByPly) {
  TemperatureSchedule t{.initial = 1.0f, .plies = 30, .final = 0.1f};
  EXPECT_EQ(t.at(0), 1.0f);
  EXPECT_EQ(t.at(29), 1.0f);
  EXPECT_EQ(t.at(30), 0.1f);
  t.plies = -1;
  EXPECT_FALSE(t.validate());
}

TEST(Temperature, SamplesInProportionToVisits) {
  auto backend = std::make_shared<nn::FakeBackend>(nn::FakeBackend::Mode::kRandom, 2);
  nn::BatchEvaluator evaluator(backend, {});
  Search search;
  search.reset(chess::Position());
  run_search(search, evaluator, {.visits = 800, .leaves_per_round = 8});
  const std::vector<ChildInfo> children = search.children();
  std::map<std::uint16_t, double> expected;
  for (const ChildInfo& c : children) expected[c.move.raw()] = c.visits / 799.0;
  Rng rng(3);
  std::map<std::uint16_t, int> seen;
  const int n = 40000;
  for (int i = 0; i < n; ++i) ++seen[choose_move(search, 1.0f, rng).raw()];
  for (const auto& [move, p] : expected) EXPECT_NEAR(seen[move] / double(n), p, 0.012) << move;
  // Temperature 0 always plays the best move.
  for (int i = 0; i < 50; ++i) EXPECT_EQ(choose_move(search, 0.0f, rng), search.best_move());
}

TEST(Resign, ConsecutiveLowValuesResign) {
  ResignPolicy policy{.threshold = -0.8f, .consecutive = 2, .disabled_fraction = 0.1f};
  ResignTracker t(policy, false);
  EXPECT_FALSE(t.update(chess::kWhite, -0.9f, 10));
  EXPECT_FALSE(t.update(chess::kBlack, 0.9f, 11));
  EXPECT_FALSE(t.update(chess::kWhite, -0.5f, 12));  // not in a row
  EXPECT_FALSE(t.update(chess::kWhite, -0.9f, 14));
  EXPECT_TRUE(t.update(chess::kWhite, -0.95f, 16));
}

TEST(Resign, DisabledGamesRememberTheFirstWouldBeResignation) {
  ResignPolicy policy{.threshold = -0.8f, .consecutive = 1, .disabled_fraction = 1.0f};
  ResignTracker t(policy, true);
  EXPECT_FALSE(t.update(chess::kWhite, 0.1f, 0));
  EXPECT_FALSE(t.update(chess::kBlack, -0.85f, 1));
  EXPECT_FALSE(t.update(chess::kWhite, -0.99f, 2));
  ASSERT_TRUE(t.would_have_resigned());
  EXPECT_EQ(t.would_have_resigned_ply(), 1);
  EXPECT_EQ(t.would_have_resigned_side(), chess::kBlack);
  ResignPolicy off{.threshold = -1.0f};
  EXPECT_FALSE(off.enabled());
  ResignTracker never(off, false);
  EXPECT_FALSE(never.update(chess::kWhite, -1.0f, 0));
}

}  // namespace
}  // namespace chessrl::mcts

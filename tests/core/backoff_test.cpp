#include "chessrl/core/backoff.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace chessrl {
namespace {

using namespace std::chrono_literals;
using Jitter = BackoffPolicy::Jitter;

std::vector<long> waits(BackoffPolicy policy, int n, std::uint64_t seed = 1) {
  Backoff backoff(policy, seed);
  std::vector<long> out;
  for (int i = 0; i < n; ++i) {
    auto wait = backoff.next();
    if (!wait) break;
    out.push_back(static_cast<long>(wait->count()));
  }
  return out;
}

TEST(Backoff, WithoutJitterDoublesUpToTheCap) {
  EXPECT_EQ(waits({100ms, 1000ms, 2, Jitter::kNone, {}}, 7),
            (std::vector<long>{100, 200, 400, 800, 1000, 1000, 1000}));
  EXPECT_EQ(waits({500ms, 30000ms, 1.5, Jitter::kNone, {}}, 3), (std::vector<long>{500, 750, 1125}));
}

TEST(Backoff, FullJitterStaysUnderTheCappedExponentialAndGrows) {
  const BackoffPolicy policy{100ms, 3000ms, 2, Jitter::kFull, {}};
  std::vector<double> mean(8, 0.0);
  for (std::uint64_t seed = 0; seed < 500; ++seed) {
    auto w = waits(policy, 8, seed);
    ASSERT_EQ(w.size(), 8u);
    for (int n = 0; n < 8; ++n) {
      const long cap = std::min<long>(3000, 100L << n);
      EXPECT_GE(w[n], 0);
      EXPECT_LE(w[n], cap) << "attempt " << n;
      mean[n] += static_cast<double>(w[n]) / 500;
    }
  }
  // The mean is half the cap: 50, 100, 200, 400, 800, 1500, 1500, 1500.
  for (int n = 0; n < 8; ++n) {
    const double half = std::min<double>(3000, 100 << n) / 2;
    EXPECT_NEAR(mean[n], half, half * 0.15) << "attempt " << n;
  }
}

TEST(Backoff, EqualJitterIsNeverUnderHalfTheCap) {
  const BackoffPolicy policy{200ms, 1600ms, 2, Jitter::kEqual, {}};
  long lowest = 1 << 30, highest = 0;
  for (std::uint64_t seed = 0; seed < 300; ++seed) {
    auto w = waits(policy, 6, seed);
    for (int n = 0; n < 6; ++n) {
      const long cap = std::min<long>(1600, 200L << n);
      EXPECT_GE(w[n], cap / 2) << "attempt " << n;
      EXPECT_LE(w[n], cap) << "attempt " << n;
    }
    lowest = std::min(lowest, w[5]);
    highest = std::max(highest, w[5]);
  }
  EXPECT_LT(lowest, 900) << "the draws spread over [800, 1600]";
  EXPECT_GT(highest, 1500);
}

TEST(Backoff, DecorrelatedJitterStaysBetweenInitialAndThreeTimesThePreviousAndTheCap) {
  const BackoffPolicy policy{100ms, 5000ms, 2, Jitter::kDecorrelated, {}};
  bool reached_cap_region = false;
  for (std::uint64_t seed = 0; seed < 300; ++seed) {
    auto w = waits(policy, 20, seed);
    long previous = 100;
    for (long wait : w) {
      EXPECT_GE(wait, 100);
      EXPECT_LE(wait, std::min<long>(5000, previous * 3 + 1));
      previous = wait;
      if (wait > 4000) reached_cap_region = true;
    }
  }
  EXPECT_TRUE(reached_cap_region) << "it grows toward the cap";
}

TEST(Backoff, ResetStartsAgainFromInitial) {
  Backoff backoff({100ms, 10000ms, 2, Jitter::kNone, {}}, 3);
  for (int i = 0; i < 5; ++i) (void)backoff.next();
  EXPECT_EQ(backoff.attempts(), 5);
  EXPECT_EQ(backoff.waited(), 3100ms);
  backoff.reset();
  EXPECT_EQ(backoff.attempts(), 0);
  EXPECT_EQ(backoff.waited(), 0ms);
  EXPECT_EQ(backoff.next(), 100ms);
}

TEST(Backoff, TheDeadlineBoundsTheTotalAndThenEndsIt) {
  Backoff backoff({100ms, 1000ms, 2, Jitter::kNone, 1000ms}, 3);
  std::vector<long> got;
  while (auto wait = backoff.next()) got.push_back(static_cast<long>(wait->count()));
  // 100 + 200 + 400 = 700; the fourth (800) is cut to the 300 left.
  EXPECT_EQ(got, (std::vector<long>{100, 200, 400, 300}));
  EXPECT_EQ(backoff.waited(), 1000ms);
  EXPECT_FALSE(backoff.next().has_value()) << "still over";
  backoff.reset();
  EXPECT_EQ(backoff.next(), 100ms) << "a reset starts a new deadline";

  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    Backoff jittered({50ms, 800ms, 2, Jitter::kFull, 5000ms}, seed);
    int n = 0;
    while (jittered.next()) ASSERT_LT(++n, 100000);
    EXPECT_EQ(jittered.waited(), 5000ms);
  }
  EXPECT_FALSE(Backoff({100ms, 1000ms, 2, Jitter::kNone, 0ms}, 1).next().has_value());
}

TEST(Backoff, TheSameSeedDrawsTheSameWaitsAndAnotherDoesNot) {
  const BackoffPolicy policy{500ms, 30000ms, 2, Jitter::kFull, {}};
  EXPECT_EQ(waits(policy, 10, 42), waits(policy, 10, 42));
  EXPECT_NE(waits(policy, 10, 42), waits(policy, 10, 43));
  const BackoffPolicy decorrelated{500ms, 30000ms, 2, Jitter::kDecorrelated, {}};
  EXPECT_EQ(waits(decorrelated, 10, 7), waits(decorrelated, 10, 7));
  // The default seed differs between objects made one after another.
  Backoff a(policy), b(policy);
  std::vector<long> wa, wb;
  for (int i = 0; i < 6; ++i) {
    wa.push_back(static_cast<long>(a.next()->count()));
    wb.push_back(static_cast<long>(b.next()->count()));
  }
  EXPECT_NE(wa, wb);
}

// 1,000 clients that failed at the same moment, each with its own seed (the
// default): their first retries spread over the first wait instead of landing
// together. With full jitter over 1 s, no 100 ms slice gets more than 15% (10%
// on average); with equal jitter over [0.5, 1] s, none more than 25% (20%).
TEST(Backoff, AThousandClientsSpreadTheirFirstRetries) {
  for (auto [jitter, most] : {std::pair{Jitter::kFull, 150}, std::pair{Jitter::kEqual, 250},
                              std::pair{Jitter::kDecorrelated, 120}}) {
    std::vector<int> slices(40, 0);
    for (int client = 0; client < 1000; ++client) {
      Backoff backoff({1000ms, 30000ms, 2, jitter, {}});
      const auto first = backoff.next()->count();
      ++slices.at(static_cast<std::size_t>(first / 100));
    }
    const int fullest = *std::max_element(slices.begin(), slices.end());
    EXPECT_LE(fullest, most) << "jitter " << static_cast<int>(jitter);
    EXPECT_GT(fullest, 0);
  }
  // Without jitter they all come back in the same slice: what the jitter is for.
  std::vector<int> slices(40, 0);
  for (int client = 0; client < 1000; ++client) {
    Backoff backoff({1000ms, 30000ms, 2, Jitter::kNone, {}});
    ++slices.at(static_cast<std::size_t>(backoff.next()->count() / 100));
  }
  EXPECT_EQ(*std::max_element(slices.begin(), slices.end()), 1000);
}

TEST(Backoff, OddPoliciesAreMadeSane) {
  // max under initial: waits of initial; a multiplier under 1: no shrinking.
  EXPECT_EQ(waits({300ms, 100ms, 2, Jitter::kNone, {}}, 3), (std::vector<long>{300, 300, 300}));
  EXPECT_EQ(waits({300ms, 1000ms, 0.5, Jitter::kNone, {}}, 3), (std::vector<long>{300, 300, 300}));
  EXPECT_EQ(waits({0ms, 1000ms, 2, Jitter::kFull, {}}, 3), (std::vector<long>{0, 0, 0}));
  // Many attempts do not overflow.
  Backoff many({1ms, 60000ms, 10, Jitter::kNone, {}}, 1);
  for (int i = 0; i < 5000; ++i) ASSERT_EQ(many.next().has_value(), true);
  EXPECT_EQ(many.next(), 60000ms);
}

}  // namespace
}  // namespace chessrl

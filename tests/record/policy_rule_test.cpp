// The policy rule every shape of a game shares (libs/record/policy_rule.h).
#include "chessrl/record/policy_rule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace chessrl::record {
namespace {

TEST(PolicyRule, ProbabilitiesAreFiniteAndInZeroOne) {
  EXPECT_TRUE(probability_ok(0.0f));
  EXPECT_TRUE(probability_ok(1.0f));
  EXPECT_TRUE(probability_ok(0.25f));
  EXPECT_FALSE(probability_ok(-1e-6f));
  EXPECT_FALSE(probability_ok(1.0001f));
  EXPECT_FALSE(probability_ok(std::numeric_limits<float>::quiet_NaN()));
  EXPECT_FALSE(probability_ok(std::numeric_limits<float>::infinity()));
}

TEST(PolicyRule, TheSumIsOneWithinTheTolerance) {
  EXPECT_FALSE(policy_sum_problem(1.0).has_value());
  EXPECT_FALSE(policy_sum_problem(1.0 + 0.9 * kPolicySumTolerance).has_value());
  EXPECT_FALSE(policy_sum_problem(1.0 - 0.9 * kPolicySumTolerance).has_value());
  const auto low = policy_sum_problem(0.9);
  ASSERT_TRUE(low.has_value());
  EXPECT_EQ(*low, "policy sums to 0.900000, not 1");
  EXPECT_TRUE(policy_sum_problem(1.0 + 2 * kPolicySumTolerance).has_value());
  EXPECT_TRUE(policy_sum_problem(std::nan("")).has_value());
}

}  // namespace
}  // namespace chessrl::record

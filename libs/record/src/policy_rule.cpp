#include "chessrl/record/policy_rule.h"

#include <cmath>

namespace chessrl::record {

bool probability_ok(float p) { return std::isfinite(p) && p >= 0.0f && p <= 1.0f; }

std::optional<std::string> policy_sum_problem(double sum) {
  if (std::fabs(sum - 1.0) <= kPolicySumTolerance) return std::nullopt;
  return "policy sums to " + std::to_string(sum) + ", not 1";
}

}  // namespace chessrl::record

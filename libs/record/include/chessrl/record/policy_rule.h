// The rules a search's policy target obeys, written once for every shape a
// game takes (self-play's GameRecord read back from JSON Lines, the wire Game
// replay validates, the trainer's Example): each probability finite and in
// [0, 1], and together summing to 1 within kPolicySumTolerance. Free
// functions; thread-safe.
#pragma once

#include <optional>
#include <string>

namespace chessrl::record {

// Searches write visit fractions as floats: their sum drifts by a few 1e-7.
inline constexpr double kPolicySumTolerance = 1e-3;

// True for a finite probability in [0, 1] (NaN is not).
bool probability_ok(float p);

// Nothing when `sum` (of a non-empty policy) is 1 within kPolicySumTolerance,
// otherwise "policy sums to <sum>, not 1".
std::optional<std::string> policy_sum_problem(double sum);

}  // namespace chessrl::record

// How long to wait before trying again: the one exponential backoff every client
// uses (the rpc layer's retries and watch, the model follower, the self-play
// pusher, the trainer's publisher, the evaluator, the Redis connection, the
// local supervisor's restarts). The n-th wait (n from 0) is drawn around
// cap(n) = min(max, initial * multiplier^n):
//   kNone          cap(n)
//   kFull          U(0, cap(n))                       (spreads clients the most)
//   kEqual         cap(n) / 2 + U(0, cap(n) / 2)      (never shorter than half)
//   kDecorrelated  min(max, U(initial, 3 * previous))  (the previous wait; initial at first)
// Jitter keeps many clients that failed together (a replay pod restarted under
// 1,000 self-play pods) from coming back together. A deadline bounds the total
// of the waits: the last wait is cut so the total reaches it exactly, and next()
// answers nullopt from then on. Draws come from SplitMix64 with the given seed
// (tests pass one; the default is different in every object and process). Not
// thread-safe: one per caller.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "chessrl/core/splitmix64.h"

namespace chessrl {

struct BackoffPolicy {
  std::chrono::milliseconds initial{100};
  std::chrono::milliseconds max{5000};
  double multiplier = 2;  // > 1 to grow; 1 keeps cap(n) at initial
  enum class Jitter { kNone, kFull, kEqual, kDecorrelated } jitter = Jitter::kFull;
  // The most the waits may add up to; nullopt: no limit.
  std::optional<std::chrono::milliseconds> deadline;
};

// A seed unlike any other this process or another makes (random_device, the
// clock and a counter, mixed).
std::uint64_t random_backoff_seed();

class Backoff {
 public:
  explicit Backoff(BackoffPolicy policy, std::uint64_t seed = random_backoff_seed());

  // The wait before the next try; nullopt once the waits have reached the
  // deadline. Counts an attempt.
  std::optional<std::chrono::milliseconds> next();
  // After a success: the next wait starts from `initial` again, the total from 0.
  void reset();
  // How many waits next() has given since the start or the last reset().
  int attempts() const { return attempts_; }
  // Their total.
  std::chrono::milliseconds waited() const { return waited_; }
  const BackoffPolicy& policy() const { return policy_; }

 private:
  std::chrono::milliseconds draw();

  BackoffPolicy policy_;
  SplitMix64 rng_;
  int attempts_ = 0;
  std::chrono::milliseconds waited_{0};
  std::chrono::milliseconds previous_{0};  // kDecorrelated's last wait
};

}  // namespace chessrl

#include "chessrl/core/backoff.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <random>

namespace chessrl {

std::uint64_t random_backoff_seed() {
  static std::atomic<std::uint64_t> counter{0};
  static const std::uint64_t process = [] {
    std::random_device device;
    return (std::uint64_t{device()} << 32) ^ device();
  }();
  const auto now = static_cast<std::uint64_t>(
      std::chrono::steady_clock::now().time_since_epoch().count());
  return mix64(process ^ mix64(now) ^ mix64(counter.fetch_add(1, std::memory_order_relaxed) +
                                            0x5bd1e995ULL));
}

Backoff::Backoff(BackoffPolicy policy, std::uint64_t seed) : policy_(policy), rng_(seed) {
  if (policy_.initial.count() < 0) policy_.initial = std::chrono::milliseconds(0);
  if (policy_.max < policy_.initial) policy_.max = policy_.initial;
  if (!(policy_.multiplier >= 1)) policy_.multiplier = 1;  // NaN too
}

void Backoff::reset() {
  attempts_ = 0;
  waited_ = std::chrono::milliseconds(0);
  previous_ = std::chrono::milliseconds(0);
}

std::chrono::milliseconds Backoff::draw() {
  using std::chrono::milliseconds;
  const double initial = static_cast<double>(policy_.initial.count());
  const double max = static_cast<double>(policy_.max.count());
  // cap(n), without overflowing however many attempts there were.
  const double cap =
      std::min(max, initial * std::pow(policy_.multiplier, std::min(attempts_, 1000)));
  double wait = cap;
  switch (policy_.jitter) {
    case BackoffPolicy::Jitter::kNone: break;
    case BackoffPolicy::Jitter::kFull: wait = rng_.uniform() * cap; break;
    case BackoffPolicy::Jitter::kEqual: wait = cap / 2 + rng_.uniform() * (cap / 2); break;
    case BackoffPolicy::Jitter::kDecorrelated: {
      const double previous =
          attempts_ == 0 ? initial : static_cast<double>(previous_.count());
      const double high = std::max(initial, previous * 3);
      wait = std::min(max, initial + rng_.uniform() * (high - initial));
      break;
    }
  }
  return milliseconds(static_cast<milliseconds::rep>(std::llround(wait)));
}

std::optional<std::chrono::milliseconds> Backoff::next() {
  if (policy_.deadline && waited_ >= *policy_.deadline) return std::nullopt;
  auto wait = draw();
  previous_ = wait;
  if (policy_.deadline) wait = std::min(wait, *policy_.deadline - waited_);
  ++attempts_;
  waited_ += wait;
  return wait;
}

}  // namespace chessrl

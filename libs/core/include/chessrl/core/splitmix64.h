// SplitMix64 (Steele, Lea, Flood 2014): the one copy every library uses, for
// reproducible draws (samples, synthetic games, data-set order), fixed tables
// (Zobrist keys), hashing and deriving seeds. Its output depends on its seed alone,
// on every platform and compiler. Not thread-safe: one generator per thread.
#pragma once

#include <cstdint>

namespace chessrl {

inline constexpr std::uint64_t kSplitMix64Gamma = 0x9E3779B97F4A7C15ULL;

// SplitMix64's output function: a bijection that mixes every input bit into every
// output bit.
constexpr std::uint64_t splitmix64_finalize(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// One SplitMix64 step from state x, without keeping the state (SplitMix64(x).next()):
// a well-mixed value from x, for hashing and for independent seeds,
// mix64(seed ^ mix64(index)).
constexpr std::uint64_t mix64(std::uint64_t x) { return splitmix64_finalize(x + kSplitMix64Gamma); }

class SplitMix64 {
 public:
  explicit constexpr SplitMix64(std::uint64_t seed) : state_(seed) {}
  constexpr std::uint64_t next() { return splitmix64_finalize(state_ += kSplitMix64Gamma); }
  // Uniform in [0, 1), 53 bits.
  constexpr double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform in [0, bound) without modulo bias (rejects the short last block).
  // Precondition: bound > 0.
  constexpr std::uint64_t below(std::uint64_t bound) {
    const std::uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    std::uint64_t x = next();
    while (x >= limit) x = next();
    return x % bound;
  }

 private:
  std::uint64_t state_;
};

}  // namespace chessrl

// Rng: a small, fast, seedable generator (xoshiro256**) with the draws search
// and self-play need. Its sequence is fixed by this code alone (no standard
// library distributions), so a seeded run gives the same games with any
// compiler and library. Not thread-safe: one per game.
#pragma once

#include <cstdint>
#include <span>

#include "chessrl/core/splitmix64.h"

namespace chessrl::mcts {

// A well-mixed 64-bit value from x (one SplitMix64 step, libs/core). Used to
// derive independent seeds: mix64(seed ^ mix64(index)).
using chessrl::mix64;

class Rng {
 public:
  explicit Rng(std::uint64_t seed = 0);
  std::uint64_t next();
  // Uniform in [0, 1), 53 bits.
  double uniform();
  // Uniform integer in [0, n); n > 0.
  std::uint64_t below(std::uint64_t n);
  // Standard normal (Box-Muller).
  double normal();
  // Gamma(shape, 1) for shape > 0 (Marsaglia and Tsang; boosted below 1).
  double gamma(double shape);
  // Fills `out` with a Dirichlet(alpha, ..., alpha) sample (sums to 1).
  void dirichlet(double alpha, std::span<float> out);

 private:
  std::uint64_t s_[4];
};

}  // namespace chessrl::mcts

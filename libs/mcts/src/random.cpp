#include "chessrl/mcts/random.h"

#include <cmath>

namespace chessrl::mcts {

Rng::Rng(std::uint64_t seed) {
  for (auto& s : s_) {
    seed = mix64(seed);
    s = seed;
  }
}

std::uint64_t Rng::next() {
  auto rotl = [](std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); };
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform() { return double(next() >> 11) * 0x1.0p-53; }

std::uint64_t Rng::below(std::uint64_t n) {
  // Lemire's multiply-shift; the bias (n / 2^64) is far below anything measurable here.
  __extension__ using u128 = unsigned __int128;
  return std::uint64_t((u128(next()) * n) >> 64);
}

double Rng::normal() {
  double u1 = uniform();
  while (u1 <= 0) u1 = uniform();
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

double Rng::gamma(double shape) {
  if (shape < 1) {
    // Gamma(a) = Gamma(a + 1) * U^(1/a).
    double u = uniform();
    while (u <= 0) u = uniform();
    return gamma(shape + 1) * std::pow(u, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = normal();
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = uniform();
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (u > 0 && std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

void Rng::dirichlet(double alpha, std::span<float> out) {
  double sum = 0;
  for (auto& x : out) {
    const double g = gamma(alpha);
    x = float(g);
    sum += g;
  }
  if (sum <= 0) {  // every draw underflowed (tiny alpha): fall back to one uniform pick
    for (auto& x : out) x = 0;
    if (!out.empty()) out[below(out.size())] = 1;
    return;
  }
  for (auto& x : out) x = float(x / sum);
}

}  // namespace chessrl::mcts

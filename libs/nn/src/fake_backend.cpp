#include <cmath>
#include <cstring>

#include "chessrl/core/splitmix64.h"
#include "chessrl/nn/backend.h"

namespace chessrl::nn {
namespace {

std::uint64_t hash_input(const InputPlanes& in, std::uint64_t seed) {
  std::uint64_t h = mix64(seed);
  for (int p = 0; p < kInputPlanes; ++p) {
    std::uint32_t bits;
    std::memcpy(&bits, &in.values[p], 4);
    h = mix64(h ^ in.masks[p] ^ (std::uint64_t(bits) << 17));
  }
  return h;
}

// A uniform draw in [0, 1) from 24 bits of x.
float unit(std::uint64_t x) { return float(x >> 40) / float(1 << 24); }

}  // namespace

void FakeBackend::forward(std::span<const InputPlanes> inputs, std::span<float> policy_logits,
                          std::span<Wdl> wdl) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    float* logits = policy_logits.data() + i * kPolicySize;
    if (mode_ == Mode::kUniform) {
      std::fill(logits, logits + kPolicySize, 0.0f);
      wdl[i] = {1.0f / 3, 1.0f / 3, 1.0f / 3};
      continue;
    }
    const std::uint64_t h = hash_input(inputs[i], seed_);
    std::uint64_t x = h;
    for (int k = 0; k < kPolicySize; ++k) {
      x = mix64(x);
      logits[k] = 4.0f * unit(x) - 2.0f;
    }
    const float w = std::exp(2.0f * unit(mix64(h ^ 1)));
    const float d = std::exp(2.0f * unit(mix64(h ^ 2)));
    const float l = std::exp(2.0f * unit(mix64(h ^ 3)));
    const float sum = w + d + l;
    wdl[i] = {w / sum, d / sum, l / sum};
  }
}

std::string FakeBackend::describe() const {
  return mode_ == Mode::kUniform ? "fake uniform"
                                 : "fake random (seed " + std::to_string(seed_) + ")";
}

}  // namespace chessrl::nn

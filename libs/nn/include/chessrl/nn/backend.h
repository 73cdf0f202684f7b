// InferenceBackend: runs the network on a batch of positions. Implementations:
// the LibTorch backend (torch_backend.h, CPU or CUDA) and FakeBackend below
// (no network, for tests and for measuring everything but the network).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "chessrl/nn/encoding.h"
#include "chessrl/nn/policy_map.h"

namespace chessrl::nn {

// Win/draw/loss probabilities for the side to move.
struct Wdl {
  float win = 0, draw = 0, loss = 0;
  // Expected score in [-1, 1].
  float value() const { return win - loss; }
};

class InferenceBackend {
 public:
  virtual ~InferenceBackend() = default;
  // Evaluates inputs.size() positions: writes kPolicySize policy logits per
  // position to `policy_logits` (size n * kPolicySize) and win/draw/loss
  // probabilities to `wdl` (size n). Safe to call from several threads at once.
  // Throws chessrl::Error on a device failure.
  virtual void forward(std::span<const InputPlanes> inputs, std::span<float> policy_logits,
                       std::span<Wdl> wdl) = 0;
  // Short description for logs and benchmarks, e.g. "libtorch cpu fp32 6x64".
  virtual std::string describe() const = 0;
  // How many forward passes should run at once to use the device fully: the
  // BatchEvaluator worker count its options leave at 0.
  virtual int preferred_streams() const { return 1; }
};

// A backend without a network, deterministic in its input.
//   kUniform: all logits 0 (a uniform policy) and an even 1/3 each WDL.
//   kRandom:  logits and WDL drawn from a hash of the input and the seed, so
//             equal inputs give equal outputs whatever the batch they are in.
class FakeBackend : public InferenceBackend {
 public:
  enum class Mode { kUniform, kRandom };
  explicit FakeBackend(Mode mode = Mode::kUniform, std::uint64_t seed = 0)
      : mode_(mode), seed_(seed) {}
  void forward(std::span<const InputPlanes> inputs, std::span<float> policy_logits,
               std::span<Wdl> wdl) override;
  std::string describe() const override;

 private:
  Mode mode_;
  std::uint64_t seed_;
};

}  // namespace chessrl::nn

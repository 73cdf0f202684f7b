// Helpers for the tests that run the LibTorch network (nn_torch_test).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "chessrl/chess/position.h"
#include "chessrl/nn/encoding.h"

namespace chessrl::nn::testing {

// The positions' classic 112 input planes as one [N, 112, 8, 8] batch.
inline torch::Tensor batch_of(std::vector<chess::Position>& positions) {
  torch::Tensor x = torch::empty({std::int64_t(positions.size()), kInputPlanes, 8, 8});
  for (size_t i = 0; i < positions.size(); ++i)
    expand(encode(positions[i]), x.data_ptr<float>() + i * kInputPlanes * 64);
  return x;
}

}  // namespace chessrl::nn::testing

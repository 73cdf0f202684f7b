// A "model bomb" for the tests: a header naming the largest architecture
// NetworkConfig::validate() admits (64x1024, 1.2 billion parameters) over one
// 4-byte tensor, a few hundred bytes in all.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "chessrl/nn/checkpoint.h"

namespace chessrl::nn::testing {

inline std::string model_bomb_bytes(std::uint64_t version = 7) {
  Checkpoint c;
  c.info.config.blocks = 64;
  c.info.config.filters = 1024;
  c.info.version = static_cast<std::int64_t>(version);
  NamedTensor t;
  t.name = "input.conv.weight";
  t.shape = {1};
  t.data.resize(4);
  c.tensors.push_back(std::move(t));
  return serialize_checkpoint(c);
}

}  // namespace chessrl::nn::testing

// The architecture of a network: what a checkpoint records and what a network
// is built from. Plain data, no LibTorch.
#pragma once

#include <string>

#include "chessrl/core/result.h"

namespace chessrl::nn {

// The network the trainer builds (and self-play's --bootstrap net) when none
// is named: the size the learning runs of docs/learning.md measured on a
// 2-core CPU. A GPU cluster names a bigger one (helm/values-gpu.yaml: 10x128).
inline constexpr const char* kDefaultNet = "4x32";

// A residual tower of `blocks` blocks of two 3x3 convolutions with `filters`
// channels, optional squeeze-excitation, a convolutional policy head (73
// planes, policy_map.h), a value head giving win/draw/loss and, off the value
// head's hidden layer, an auxiliary material head (training only).
struct NetworkConfig {
  int blocks = 6;
  int filters = 64;
  // Squeeze-excitation: each block pools its channels into filters / se_ratio
  // units and rescales them. 0 disables it.
  int se_ratio = 0;
  int value_channels = 32;  // 1x1 convolution before the value head's dense layers
  int value_hidden = 128;   // units of the value head's hidden dense layer
  // 1: an auxiliary output predicting the side to move's material lead a few
  // plies later (KataGo's ownership and score targets, for chess), trained
  // beside the value; inference ignores it. 0 in checkpoints made before it.
  int material_head = 1;

  bool operator==(const NetworkConfig&) const = default;
  // "6x64", "10x128-se4": blocks x filters, and the SE ratio when on.
  std::string name() const;
  // Every field in range (blocks 1..64, filters 1..1024, filters divisible by
  // se_ratio, ...); the error names the field.
  Result<void> validate() const;
  // The first field that differs, as "blocks 6 vs 10", or "" when equal.
  std::string difference(const NetworkConfig& other) const;
};

// Parses "BxF" or "BxF-seR" (as name() writes it).
Result<NetworkConfig> parse_network_name(const std::string& text);

}  // namespace chessrl::nn

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
  // Input planes beyond the 112 of encoding.h: 0 none, 1 the chess features
  // (attacks, pieces en prise, checkers and pins, material: encoding.h).
  int input_features = 0;
  // Every Nth residual block (the Nth, 2Nth, ...) also pools its channels over
  // the board (mean and max) and adds what it learns from them back to every
  // square as a bias (KataGo's global pooling). 0: none.
  int global_pool = 0;
  // Training-only heads: 1 predicts the opponent's reply (the move played
  // next, as a policy over the opponent's moves); 1 predicts the plies left in
  // the game (lc0's moves-left head). Inference ignores both.
  int reply_head = 0;
  int moves_left_head = 0;

  bool operator==(const NetworkConfig&) const = default;
  // Whether tower block `index` (0-based: tower.0, tower.1, ...) has global
  // pooling: the blocks global_pool, 2 x global_pool, ... counting from 1.
  bool pools_globally(int index) const { return global_pool > 0 && (index + 1) % global_pool == 0; }
  // "6x64", "10x128-se4", "4x32-se4-gp2-feat-reply-mlh": blocks x filters,
  // then a word for each option that is on: -seR (se_ratio R), -gpN
  // (global_pool N), -feat (input_features 1), -reply, -mlh.
  std::string name() const;
  // Every field in range (blocks 1..64, filters 1..1024, filters divisible by
  // se_ratio, ...); the error names the field.
  Result<void> validate() const;
  // The first field that differs, as "blocks 6 vs 10", or "" when equal.
  std::string difference(const NetworkConfig& other) const;
};

// Parses "BxF" followed by any of -seR, -gpN, -feat, -reply, -mlh, each at
// most once, in any order (name() writes them in that order).
Result<NetworkConfig> parse_network_name(const std::string& text);

}  // namespace chessrl::nn

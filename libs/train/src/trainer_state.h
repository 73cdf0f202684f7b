// The trainer's state in a checkpoint's optimizer section, and the checkpoint
// files of a directory. Internal to libs/train; no LibTorch.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chessrl/core/result.h"
#include "chessrl/train/trainer.h"

namespace chessrl::train {

// "CHRLOPT1", u32 length, JSON (TrainerState), then `archive` (LibTorch's
// archive of the optimizer's state).
std::string encode_state(const TrainerState& s, const std::string& archive);

struct DecodedState {
  TrainerState state;
  std::string_view archive;  // points into the decoded bytes
};
Result<DecodedState> decode_state(std::string_view bytes);

// (step, path) of every checkpoint in dir, by increasing step.
Result<std::vector<std::pair<std::int64_t, std::string>>> list_checkpoints(const std::string& dir);

}  // namespace chessrl::train

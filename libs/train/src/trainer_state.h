// The trainer's state in a checkpoint's optimizer section, and the checkpoint
// files of a directory. Internal to libs/train; no LibTorch.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
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

// The checkpoint a run resumes from: the newest in `dir` that reads back whole
// (file, CRC, trainer state). One proven damaged by its own checks
// (nn::checkpoint_damage) is renamed to <name>.corrupt with a warning and the
// previous one tried; one that cannot be read now, or is whole but unusable by
// this build (a newer format), is an error, and stays where it is; a checkpoint written by another
// world size is taken with a warning naming both sizes (the weights and the
// optimizer state are the same on every rank). Nothing when `dir` holds no
// checkpoint; an error when none of them reads back.
struct ResumePoint {
  std::string path;
  std::string bytes;
  TrainerState state;
};
Result<std::optional<ResumePoint>> find_resume_point(
    const std::string& dir, int world_size, const std::function<void(const std::string&)>& log);

}  // namespace chessrl::train

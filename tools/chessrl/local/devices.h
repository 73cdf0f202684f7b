// Which device each child of `chessrl local` runs on: `--device` for all of
// them, or one self-play process per GPU of `--gpus` and one trainer rank per
// GPU of `--train-gpus` (NCCL refuses two ranks on one GPU). A child given a
// GPU sees that GPU alone (CUDA_VISIBLE_DEVICES) and is told `--device cuda`,
// so that each process's cuda:0 is its own GPU. Pure: unit-tested without a GPU.
#pragma once

#include <string>
#include <vector>

#include "chessrl/core/result.h"
#include "local/options.h"

namespace chessrl::tool {

struct DeviceAssignment {
  std::string device;   // the child's --device; "" leaves the binary's own default
  std::string visible;  // CUDA_VISIBLE_DEVICES; "" leaves the environment as it is
};

struct DevicePlan {
  std::vector<DeviceAssignment> selfplay;  // one per self-play process
  std::vector<DeviceAssignment> trainers;  // one per rank
  DeviceAssignment evaluator;
};

// GPU indices from "0,1,3"; fails naming `flag` and the problem (empty, not a
// number, repeated).
Result<std::vector<int>> parse_gpu_list(const std::string& flag, const std::string& text);

// The plan for `o`. `selfplay_given`, `trainers_given`: --selfplay and
// --trainers were on the command line (a count that disagrees with a GPU
// list is refused rather than silently replaced).
Result<DevicePlan> plan_devices(const LocalOptions& o, bool selfplay_given, bool trainers_given);

// The child's --device flag and environment for an assignment.
std::vector<std::string> device_args(const DeviceAssignment& a);
void add_device_env(const DeviceAssignment& a,
                    std::vector<std::pair<std::string, std::string>>& env);

}  // namespace chessrl::tool

#include "local/devices.h"

#include <algorithm>
#include <cctype>

namespace chessrl::tool {

namespace {

constexpr int kMaxGpuIndex = 1023;

DeviceAssignment on_gpu(int index) { return {"cuda", std::to_string(index)}; }

}  // namespace

Result<std::vector<int>> parse_gpu_list(const std::string& flag, const std::string& text) {
  std::vector<int> gpus;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string item =
        text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty() || item.size() > 4 ||
        !std::all_of(item.begin(), item.end(), [](unsigned char c) { return std::isdigit(c); }))
      return fail(flag + " " + text + ": '" + item +
                  "' is not a GPU index (a list of numbers such as 0,1,2,3)");
    const int index = std::stoi(item);
    if (index > kMaxGpuIndex)
      return fail(flag + " " + text + ": GPU " + item + " is above " +
                  std::to_string(kMaxGpuIndex));
    if (std::find(gpus.begin(), gpus.end(), index) != gpus.end())
      return fail(flag + " " + text + ": GPU " + item + " is listed twice" +
                  (flag == "--train-gpus"
                       ? " (one trainer rank per GPU: NCCL refuses two ranks on one GPU)"
                       : " (one self-play process per GPU; --concurrent sets how many games "
                         "each plays)"));
    gpus.push_back(index);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return gpus;
}

Result<DevicePlan> plan_devices(const LocalOptions& o, bool selfplay_given, bool trainers_given) {
  const std::string device = o.device.value_or("");
  if (!device.empty() && device != "cpu" && device != "cuda" && device != "auto")
    return fail("--device " + device + ": cpu, cuda or auto");
  DevicePlan plan;
  const DeviceAssignment everywhere{device, ""};
  std::vector<int> gpus, train_gpus;
  if (!o.gpus.empty()) {
    auto parsed = parse_gpu_list("--gpus", o.gpus);
    if (!parsed.ok()) return fail(parsed.error());
    gpus = *parsed;
  }
  if (!o.train_gpus.empty()) {
    auto parsed = parse_gpu_list("--train-gpus", o.train_gpus);
    if (!parsed.ok()) return fail(parsed.error());
    train_gpus = *parsed;
  }
  if (device == "cpu" && (!gpus.empty() || !train_gpus.empty()))
    return fail("--device cpu and " + std::string(gpus.empty() ? "--train-gpus" : "--gpus") +
                ": a GPU list runs those children on CUDA; leave --device out");

  // Self-play: one process per GPU of --gpus, else --selfplay on --device.
  if (gpus.empty()) {
    plan.selfplay.assign(std::size_t(o.selfplay), everywhere);
  } else {
    if (selfplay_given && std::size_t(o.selfplay) != gpus.size())
      return fail("--selfplay " + std::to_string(o.selfplay) + " and --gpus " + o.gpus +
                  " disagree: --gpus runs one self-play process per GPU (" +
                  std::to_string(gpus.size()) + ")");
    for (int g : gpus) plan.selfplay.push_back(on_gpu(g));
  }

  // The trainer: one rank per GPU of --train-gpus; else with --gpus, rank r on
  // its r-th GPU; else --trainers ranks on --device.
  if (!train_gpus.empty()) {
    if (train_gpus.size() > 8)
      return fail("--train-gpus " + o.train_gpus + ": at most 8 ranks (--trainers' limit)");
    if (trainers_given && std::size_t(o.trainers) != train_gpus.size())
      return fail("--trainers " + std::to_string(o.trainers) + " and --train-gpus " +
                  o.train_gpus + " disagree: one rank per GPU (" +
                  std::to_string(train_gpus.size()) + ")");
    for (int g : train_gpus) plan.trainers.push_back(on_gpu(g));
  } else if (!gpus.empty()) {
    if (std::size_t(o.trainers) > gpus.size())
      return fail("--trainers " + std::to_string(o.trainers) + " on --gpus " + o.gpus +
                  ": more ranks than GPUs, and NCCL refuses two ranks on one GPU; give the "
                  "ranks their GPUs with --train-gpus");
    for (int r = 0; r < o.trainers; ++r) plan.trainers.push_back(on_gpu(gpus[std::size_t(r)]));
  } else {
    plan.trainers.assign(std::size_t(o.trainers), everywhere);
  }

  // The evaluator: the last GPU of --gpus (rank 0 trains on the first), else
  // the first of --train-gpus, else --device.
  if (!gpus.empty())
    plan.evaluator = on_gpu(gpus.back());
  else if (!train_gpus.empty())
    plan.evaluator = on_gpu(train_gpus.front());
  else
    plan.evaluator = everywhere;
  return plan;
}

std::vector<std::string> device_args(const DeviceAssignment& a) {
  if (a.device.empty()) return {};
  return {"--device", a.device};
}

void add_device_env(const DeviceAssignment& a,
                    std::vector<std::pair<std::string, std::string>>& env) {
  if (!a.visible.empty()) env.emplace_back("CUDA_VISIBLE_DEVICES", a.visible);
}

}  // namespace chessrl::tool

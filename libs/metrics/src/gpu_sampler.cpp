#include "chessrl/metrics/gpu_sampler.h"

#include <string>

#include "chessrl/core/gpu_info.h"

namespace chessrl::metrics {

GpuSampler::GpuSampler(Registry& registry, std::chrono::milliseconds period)
    : registry_(registry), period_(period) {
  if (sample()) thread_ = std::thread([this] { run(); });
}

GpuSampler::~GpuSampler() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool GpuSampler::sample() {
  const GpuQuery query = query_gpus();
  if (!query.nvml_loaded) return false;
  for (const GpuInfo& gpu : query.gpus) {
    const Labels labels{{"gpu", std::to_string(gpu.index)}};
    registry_
        .gauge("chessrl_gpu_info", "GPUs NVML reports, by index and name; the value is always 1",
               {{"gpu", labels.at("gpu")}, {"name", gpu.name}})
        .set(1);
    // A negative utilization: NVML does not report it for this GPU (MIG).
    if (gpu.utilization >= 0) {
      registry_
          .gauge("chessrl_gpu_utilization_ratio",
                 "Fraction of NVML's last sample period (about 1 s) in which a kernel ran", labels)
          .set(gpu.utilization);
    }
    registry_.gauge("chessrl_gpu_memory_used_bytes", "GPU memory in use (all processes)", labels)
        .set(double(gpu.memory_used_bytes));
    registry_.gauge("chessrl_gpu_memory_total_bytes", "GPU memory", labels)
        .set(double(gpu.memory_total_bytes));
  }
  gpus_.store(static_cast<int>(query.gpus.size()), std::memory_order_relaxed);
  return true;
}

void GpuSampler::run() {
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, period_, [this] { return stop_; })) {
    lock.unlock();
    sample();
    lock.lock();
  }
}

}  // namespace chessrl::metrics

// GpuSampler: the GPUs' utilization and memory as gauges, read from NVML
// (chessrl::query_gpus) when constructed and then every `period` on a thread
// of its own:
//   chessrl_gpu_utilization_ratio{gpu="0"}   kernel time over NVML's last sample period, 0..1
//   chessrl_gpu_memory_used_bytes{gpu="0"}
//   chessrl_gpu_memory_total_bytes{gpu="0"}
//   chessrl_gpu_info{gpu="0",name="NVIDIA H100 80GB HBM3"} 1
// Without NVML (no NVIDIA driver) it creates no series, starts no thread and
// logs nothing. The registry must outlive it; the destructor stops the thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "chessrl/metrics/registry.h"

namespace chessrl::metrics {

class GpuSampler {
 public:
  explicit GpuSampler(Registry& registry,
                      std::chrono::milliseconds period = std::chrono::seconds(5));
  ~GpuSampler();
  GpuSampler(const GpuSampler&) = delete;
  GpuSampler& operator=(const GpuSampler&) = delete;

  // GPUs seen by the last sample (0 without NVML).
  int gpus() const { return gpus_.load(std::memory_order_relaxed); }

 private:
  // Reads every GPU once into the gauges; false when NVML is not there.
  bool sample();
  void run();

  Registry& registry_;
  const std::chrono::milliseconds period_;
  std::atomic<int> gpus_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace chessrl::metrics

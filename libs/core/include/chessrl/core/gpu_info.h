// What the NVIDIA driver says about this machine's GPUs, from NVML loaded at
// run time (dlopen "libnvidia-ml.so.1", which the driver installs), so the
// build needs no CUDA and a machine without a GPU simply reports none. The
// environment variable CHESSRL_NVML_LIBRARY names another library file (tests
// use a fake one). Likewise NCCL's version from "libnccl.so.2"
// (CHESSRL_NCCL_LIBRARY overrides it).
//
// Each library is loaded, and NVML initialised, once per process and path;
// every function here is thread-safe and never throws.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace chessrl {

struct GpuInfo {
  int index = 0;
  std::string name;  // "NVIDIA H100 80GB HBM3"
  std::uint64_t memory_total_bytes = 0;
  std::uint64_t memory_used_bytes = 0;
  double utilization = 0;  // kernel time over the last sample period, 0..1; -1: not reported (MIG)
};

struct GpuQuery {
  bool nvml_loaded = false;    // NVML loaded and initialised
  std::string driver_version;  // "550.54.15"
  std::vector<GpuInfo> gpus;   // by index
  std::string error;           // why there is less than that; empty when all went well
};

// The GPUs now. Without NVML: nvml_loaded false, no GPUs, and an error that
// starts "NVML not found (no NVIDIA driver)".
GpuQuery query_gpus();
// The same from the NVML library at `library_path` (query_gpus() uses
// CHESSRL_NVML_LIBRARY, or libnvidia-ml.so.1).
GpuQuery query_gpus_from(const std::string& library_path);

struct NcclInfo {
  bool found = false;
  std::string library;  // the file asked for: "libnccl.so.2"
  std::string path;     // the file loaded: "/usr/lib/x86_64-linux-gnu/libnccl.so.2"
  std::string version;  // "2.18.3" (from ncclGetVersion)
  std::string error;    // why not found, or why there is no version
};

NcclInfo query_nccl();
NcclInfo query_nccl_from(const std::string& library_path);

}  // namespace chessrl

#include "chessrl/core/gpu_info.h"

#include <dlfcn.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

namespace chessrl {
namespace {

// The few NVML declarations used (nvml.h is not needed to build), as in
// NVIDIA's header: every call returns nvmlReturn_t, 0 on success.
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlUtilization_t {
  unsigned int gpu, memory;  // percent
};
constexpr nvmlReturn_t kNvmlSuccess = 0;

struct Nvml {
  void* handle = nullptr;
  std::string error;  // non-empty: not usable
  nvmlReturn_t (*device_count)(unsigned int*) = nullptr;
  nvmlReturn_t (*handle_by_index)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*driver_version)(char*, unsigned int) = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;  // optional

  std::string describe(const char* call, nvmlReturn_t rc) const {
    std::string text = std::string(call) + " failed: ";
    const char* message = error_string ? error_string(rc) : nullptr;
    return text + (message ? message : "NVML error " + std::to_string(rc));
  }
};

template <class Fn>
bool load_symbol(void* handle, const char* symbol, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(handle, symbol));
  return fn != nullptr;
}

std::string dl_error() {
  const char* e = dlerror();
  return e ? e : "unknown error";
}

// Loads the library and initialises NVML. Called once per path.
std::unique_ptr<Nvml> load_nvml(const std::string& path, bool overridden) {
  auto nvml = std::make_unique<Nvml>();
  nvml->handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (nvml->handle == nullptr) {
    nvml->error = "NVML not found (no NVIDIA driver)";
    if (overridden) nvml->error += ": " + dl_error();
    return nvml;
  }
  nvmlReturn_t (*init)() = nullptr;
  const bool complete =
      load_symbol(nvml->handle, "nvmlInit_v2", init) &&
      load_symbol(nvml->handle, "nvmlDeviceGetCount_v2", nvml->device_count) &&
      load_symbol(nvml->handle, "nvmlDeviceGetHandleByIndex_v2", nvml->handle_by_index) &&
      load_symbol(nvml->handle, "nvmlDeviceGetName", nvml->name) &&
      load_symbol(nvml->handle, "nvmlDeviceGetMemoryInfo", nvml->memory) &&
      load_symbol(nvml->handle, "nvmlDeviceGetUtilizationRates", nvml->utilization) &&
      load_symbol(nvml->handle, "nvmlSystemGetDriverVersion", nvml->driver_version);
  if (!complete) {
    nvml->error = path + " is not a usable NVML: " + dl_error();
    return nvml;
  }
  load_symbol(nvml->handle, "nvmlErrorString", nvml->error_string);
  if (const nvmlReturn_t rc = init(); rc != kNvmlSuccess)
    nvml->error = nvml->describe("nvmlInit_v2", rc);
  return nvml;
}

std::string env_or(const char* variable, const char* fallback) {
  const char* value = std::getenv(variable);
  return value && *value ? value : fallback;
}

// The libraries by path, loaded on first use and kept for the process's life.
std::mutex g_mutex;
std::map<std::string, std::unique_ptr<Nvml>> g_nvml;
std::map<std::string, NcclInfo> g_nccl;

const Nvml& nvml_for(const std::string& path) {
  std::lock_guard lock(g_mutex);
  auto& slot = g_nvml[path];
  if (!slot) slot = load_nvml(path, path != "libnvidia-ml.so.1");
  return *slot;
}

NcclInfo load_nccl(const std::string& path) {
  NcclInfo info;
  info.library = path;
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    info.error = dl_error();
    return info;
  }
  info.found = true;
  int (*get_version)(int*) = nullptr;  // ncclResult_t ncclGetVersion(int*); 0 is ncclSuccess
  int code = 0;
  if (!load_symbol(handle, "ncclGetVersion", get_version)) {
    info.error = "no ncclGetVersion in " + path;
  } else if (const int rc = get_version(&code); rc != 0) {
    info.error = "ncclGetVersion failed: error " + std::to_string(rc);
  } else {
    if (Dl_info where{};
        dladdr(reinterpret_cast<void*>(get_version), &where) != 0 && where.dli_fname)
      info.path = where.dli_fname;
    // NCCL_VERSION_CODE: major*10000 + minor*100 + patch since 2.9, major*1000 + ... before.
    const int scale = code >= 10000 ? 10000 : 1000;
    info.version = std::to_string(code / scale) + "." + std::to_string(code % scale / 100) + "." +
                   std::to_string(code % 100);
  }
  return info;  // the library stays loaded, as NVML does
}

}  // namespace

GpuQuery query_gpus_from(const std::string& library_path) {
  GpuQuery query;
  try {
    const Nvml& nvml = nvml_for(library_path);
    if (!nvml.error.empty()) {
      query.error = nvml.error;
      return query;
    }
    query.nvml_loaded = true;
    char text[256] = {};
    if (const auto rc = nvml.driver_version(text, sizeof text); rc == kNvmlSuccess) {
      query.driver_version = text;
    } else {
      query.error = nvml.describe("nvmlSystemGetDriverVersion", rc);
    }
    unsigned int count = 0;
    if (const auto rc = nvml.device_count(&count); rc != kNvmlSuccess) {
      query.error = nvml.describe("nvmlDeviceGetCount_v2", rc);
      return query;
    }
    for (unsigned int i = 0; i < count; ++i) {
      nvmlDevice_t device = nullptr;
      if (const auto rc = nvml.handle_by_index(i, &device); rc != kNvmlSuccess) {
        query.error =
            nvml.describe("nvmlDeviceGetHandleByIndex_v2", rc) + " for GPU " + std::to_string(i);
        continue;
      }
      GpuInfo gpu;
      gpu.index = static_cast<int>(i);
      char name[256] = {};
      gpu.name = nvml.name(device, name, sizeof name) == kNvmlSuccess ? name : "unknown";
      nvmlMemory_t memory{};
      if (nvml.memory(device, &memory) == kNvmlSuccess) {
        gpu.memory_total_bytes = memory.total;
        gpu.memory_used_bytes = memory.used;
      }
      nvmlUtilization_t rates{};
      gpu.utilization =
          nvml.utilization(device, &rates) == kNvmlSuccess ? double(rates.gpu) / 100.0 : -1.0;
      query.gpus.push_back(std::move(gpu));
    }
  } catch (const std::exception& e) {  // allocation failure: report, never throw
    query.error = e.what();
  }
  return query;
}

GpuQuery query_gpus() {
  return query_gpus_from(env_or("CHESSRL_NVML_LIBRARY", "libnvidia-ml.so.1"));
}

NcclInfo query_nccl_from(const std::string& library_path) {
  try {
    std::lock_guard lock(g_mutex);
    auto it = g_nccl.find(library_path);
    if (it == g_nccl.end()) it = g_nccl.emplace(library_path, load_nccl(library_path)).first;
    return it->second;
  } catch (const std::exception& e) {
    NcclInfo info;
    info.library = library_path;
    info.error = e.what();
    return info;
  }
}

NcclInfo query_nccl() { return query_nccl_from(env_or("CHESSRL_NCCL_LIBRARY", "libnccl.so.2")); }

}  // namespace chessrl

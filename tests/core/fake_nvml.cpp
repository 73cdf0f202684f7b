// A stand-in for the NVIDIA driver's libnvidia-ml.so.1 (and NCCL's
// ncclGetVersion) with two fake GPUs, loaded by the tests through
// CHESSRL_NVML_LIBRARY / query_gpus_from(). The fake_nvml_* functions let a
// test change what it reports and count nvmlInit_v2 calls.
#include <atomic>
#include <cstdio>
#include <cstring>

namespace {

struct FakeGpu {
  const char* name;
  unsigned long long total, used;
  std::atomic<unsigned> utilization;  // percent
};

FakeGpu g_gpus[2] = {
    {"Fake GPU Alpha 80GB", 80ull << 30, 20ull << 30, {37}},
    {"Fake GPU Beta 16GB", 16ull << 30, 1ull << 30, {5}},
};
std::atomic<int> g_init_calls{0};

struct Memory {
  unsigned long long total, free, used;
};
struct Utilization {
  unsigned int gpu, memory;
};

constexpr int kSuccess = 0, kInvalidArgument = 2, kUninitialized = 1;

FakeGpu* gpu(void* device) {
  for (auto& g : g_gpus)
    if (device == &g) return &g;
  return nullptr;
}

}  // namespace

extern "C" {

int nvmlInit_v2() {
  ++g_init_calls;
  return kSuccess;
}

int nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  if (version == nullptr || length < 10) return kInvalidArgument;
  std::snprintf(version, length, "555.42.06");
  return kSuccess;
}

int nvmlDeviceGetCount_v2(unsigned int* count) {
  if (g_init_calls == 0) return kUninitialized;
  *count = 2;
  return kSuccess;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  if (index >= 2 || device == nullptr) return kInvalidArgument;
  *device = &g_gpus[index];
  return kSuccess;
}

int nvmlDeviceGetName(void* device, char* name, unsigned int length) {
  FakeGpu* g = gpu(device);
  if (g == nullptr || name == nullptr || length <= std::strlen(g->name)) return kInvalidArgument;
  std::snprintf(name, length, "%s", g->name);
  return kSuccess;
}

int nvmlDeviceGetMemoryInfo(void* device, Memory* memory) {
  FakeGpu* g = gpu(device);
  if (g == nullptr || memory == nullptr) return kInvalidArgument;
  *memory = {g->total, g->total - g->used, g->used};
  return kSuccess;
}

int nvmlDeviceGetUtilizationRates(void* device, Utilization* rates) {
  FakeGpu* g = gpu(device);
  if (g == nullptr || rates == nullptr) return kInvalidArgument;
  *rates = {g->utilization.load(), 10};
  return kSuccess;
}

const char* nvmlErrorString(int rc) { return rc == kSuccess ? "Success" : "Fake error"; }

// NCCL 2.18.3 (NCCL_VERSION_CODE).
int ncclGetVersion(int* version) {
  *version = 21803;
  return 0;
}

void fake_nvml_set_utilization(unsigned int index, unsigned int percent) {
  if (index < 2) g_gpus[index].utilization = percent;
}

int fake_nvml_init_calls() { return g_init_calls.load(); }

}  // extern "C"

#include "chessrl/metrics/gpu_sampler.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

namespace chessrl::metrics {
namespace {

using namespace std::chrono_literals;

// Points query_gpus() at a library for one test.
class NvmlLibrary {
 public:
  explicit NvmlLibrary(const char* path) { ::setenv("CHESSRL_NVML_LIBRARY", path, 1); }
  ~NvmlLibrary() { ::unsetenv("CHESSRL_NVML_LIBRARY"); }
};

void set_fake_utilization(unsigned gpu, unsigned percent) {
  void* handle = dlopen(CHESSRL_FAKE_NVML, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(handle, nullptr) << "the fake NVML is not loaded";
  auto set =
      reinterpret_cast<void (*)(unsigned, unsigned)>(dlsym(handle, "fake_nvml_set_utilization"));
  ASSERT_NE(set, nullptr);
  set(gpu, percent);
  dlclose(handle);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(GpuSampler, ExportsEveryGpuOfTheFakeNvml) {
  NvmlLibrary fake(CHESSRL_FAKE_NVML);
  Registry registry;
  GpuSampler sampler(registry, 20ms);
  EXPECT_EQ(sampler.gpus(), 2);
  const std::string text = registry.serialize();
  EXPECT_TRUE(contains(text, "# TYPE chessrl_gpu_utilization_ratio gauge\n")) << text;
  EXPECT_TRUE(contains(text, "chessrl_gpu_utilization_ratio{gpu=\"0\"} 0.37\n")) << text;
  EXPECT_TRUE(contains(text, "chessrl_gpu_utilization_ratio{gpu=\"1\"} 0.05\n")) << text;
  EXPECT_TRUE(contains(text, "chessrl_gpu_memory_used_bytes{gpu=\"0\"} 21474836480\n")) << text;
  EXPECT_TRUE(contains(text, "chessrl_gpu_memory_used_bytes{gpu=\"1\"} 1073741824\n")) << text;
  EXPECT_TRUE(contains(text, "chessrl_gpu_memory_total_bytes{gpu=\"0\"} 85899345920\n")) << text;
  EXPECT_TRUE(contains(text, "chessrl_gpu_memory_total_bytes{gpu=\"1\"} 17179869184\n")) << text;
  EXPECT_TRUE(contains(text, "chessrl_gpu_info{gpu=\"0\",name=\"Fake GPU Alpha 80GB\"} 1\n"))
      << text;
  EXPECT_TRUE(contains(text, "chessrl_gpu_info{gpu=\"1\",name=\"Fake GPU Beta 16GB\"} 1\n"))
      << text;
}

TEST(GpuSampler, SamplesAgainEveryPeriod) {
  NvmlLibrary fake(CHESSRL_FAKE_NVML);
  Registry registry;
  GpuSampler sampler(registry, 20ms);
  ASSERT_EQ(sampler.gpus(), 2);
  set_fake_utilization(1, 64);
  const std::string wanted = "chessrl_gpu_utilization_ratio{gpu=\"1\"} 0.64\n";
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!contains(registry.serialize(), wanted) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  set_fake_utilization(1, 5);
  EXPECT_TRUE(contains(registry.serialize(), wanted)) << registry.serialize();
}

TEST(GpuSampler, WithoutNvmlNoSeriesAndNoNoise) {
  NvmlLibrary none("/nonexistent/libnvidia-ml.so.1");
  Registry registry;
  add_build_info(registry);
  testing::internal::CaptureStderr();
  {
    GpuSampler sampler(registry, 20ms);
    EXPECT_EQ(sampler.gpus(), 0);
    std::this_thread::sleep_for(60ms);
  }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  const std::string text = registry.serialize();
  EXPECT_FALSE(contains(text, "chessrl_gpu")) << text;
  EXPECT_TRUE(contains(text, "chessrl_build_info")) << text;
}

}  // namespace
}  // namespace chessrl::metrics

#include "chessrl/core/gpu_info.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace chessrl {
namespace {

constexpr const char* kFake = CHESSRL_FAKE_NVML;

// A function of the fake library, from the copy query_gpus_from() loaded.
template <class Fn>
Fn fake_function(const char* name) {
  void* handle = dlopen(kFake, RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) return nullptr;
  auto fn = reinterpret_cast<Fn>(dlsym(handle, name));
  dlclose(handle);  // drops the reference RTLD_NOLOAD took; the library stays loaded
  return fn;
}

TEST(GpuInfo, ReportsEveryGpuOfTheLibrary) {
  const GpuQuery q = query_gpus_from(kFake);
  EXPECT_TRUE(q.nvml_loaded);
  EXPECT_EQ(q.error, "");
  EXPECT_EQ(q.driver_version, "555.42.06");
  ASSERT_EQ(q.gpus.size(), 2u);
  EXPECT_EQ(q.gpus[0].index, 0);
  EXPECT_EQ(q.gpus[0].name, "Fake GPU Alpha 80GB");
  EXPECT_EQ(q.gpus[0].memory_total_bytes, 80ull << 30);
  EXPECT_EQ(q.gpus[0].memory_used_bytes, 20ull << 30);
  EXPECT_DOUBLE_EQ(q.gpus[0].utilization, 0.37);
  EXPECT_EQ(q.gpus[1].index, 1);
  EXPECT_EQ(q.gpus[1].name, "Fake GPU Beta 16GB");
  EXPECT_EQ(q.gpus[1].memory_total_bytes, 16ull << 30);
  EXPECT_EQ(q.gpus[1].memory_used_bytes, 1ull << 30);
  EXPECT_DOUBLE_EQ(q.gpus[1].utilization, 0.05);
}

TEST(GpuInfo, EachQueryReadsTheGpusAgainButInitialisesOnce) {
  ASSERT_TRUE(query_gpus_from(kFake).nvml_loaded);
  auto set_utilization = fake_function<void (*)(unsigned, unsigned)>("fake_nvml_set_utilization");
  auto init_calls = fake_function<int (*)()>("fake_nvml_init_calls");
  ASSERT_NE(set_utilization, nullptr);
  ASSERT_NE(init_calls, nullptr);
  set_utilization(0, 90);
  EXPECT_DOUBLE_EQ(query_gpus_from(kFake).gpus.at(0).utilization, 0.9);
  set_utilization(0, 37);
  EXPECT_DOUBLE_EQ(query_gpus_from(kFake).gpus.at(0).utilization, 0.37);
  EXPECT_EQ(init_calls(), 1);
}

TEST(GpuInfo, EnvironmentVariableChoosesTheLibrary) {
  ::setenv("CHESSRL_NVML_LIBRARY", kFake, 1);
  const GpuQuery fake = query_gpus();
  ::setenv("CHESSRL_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  const GpuQuery none = query_gpus();
  ::unsetenv("CHESSRL_NVML_LIBRARY");
  EXPECT_TRUE(fake.nvml_loaded);
  EXPECT_EQ(fake.gpus.size(), 2u);

  EXPECT_FALSE(none.nvml_loaded);
  EXPECT_TRUE(none.gpus.empty());
  EXPECT_EQ(none.driver_version, "");
  EXPECT_EQ(none.error.rfind("NVML not found (no NVIDIA driver)", 0), 0u) << none.error;
  EXPECT_NE(none.error.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos) << none.error;
}

TEST(GpuInfo, ALibraryThatIsNotNvmlIsAnErrorNotACrash) {
  const GpuQuery q = query_gpus_from("libm.so.6");
  EXPECT_FALSE(q.nvml_loaded);
  EXPECT_TRUE(q.gpus.empty());
  EXPECT_NE(q.error.find("libm.so.6 is not a usable NVML"), std::string::npos) << q.error;
}

TEST(NcclInfo, VersionFromNcclGetVersion) {
  const NcclInfo found = query_nccl_from(kFake);
  EXPECT_TRUE(found.found);
  EXPECT_EQ(found.library, kFake);
  EXPECT_EQ(found.version, "2.18.3");
  EXPECT_NE(found.path.find("chessrl_fake_nvml"), std::string::npos) << found.path;
  EXPECT_EQ(found.error, "");

  const NcclInfo missing = query_nccl_from("/nonexistent/libnccl.so.2");
  EXPECT_FALSE(missing.found);
  EXPECT_EQ(missing.version, "");
  EXPECT_NE(missing.error.find("/nonexistent/libnccl.so.2"), std::string::npos) << missing.error;

  const NcclInfo no_symbol = query_nccl_from("libm.so.6");
  EXPECT_TRUE(no_symbol.found);
  EXPECT_EQ(no_symbol.version, "");
  EXPECT_NE(no_symbol.error.find("no ncclGetVersion"), std::string::npos) << no_symbol.error;
}

}  // namespace
}  // namespace chessrl

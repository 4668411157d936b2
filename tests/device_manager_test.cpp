// DeviceManager (device_manager.hpp): devices, properties, memory status, plugins.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "xhal/xhal.hpp"

namespace xhal {
namespace {

TEST(DeviceManager, CpuIsAlwaysThere) {
  auto& m = DeviceManager::instance();
  ASSERT_TRUE(m.has_device(Device::cpu()));
  auto props = m.properties(Device::cpu());
  EXPECT_FALSE(props.name.empty());
  EXPECT_FALSE(props.arch.empty());
  EXPECT_GT(props.total_memory, 0u);
  EXPECT_GE(props.compute_units, 1);
  EXPECT_GE(props.warp_size, 1);
  auto mem = m.memory_status(Device::cpu());
  EXPECT_GT(mem.total, 0u);
  EXPECT_LE(mem.free, mem.total);
}

TEST(DeviceManager, AbsentDevicesAreClearErrors) {
  auto& m = DeviceManager::instance();
  EXPECT_FALSE(m.has_device({DeviceType::cpu, 1}));
  try {
    m.properties({DeviceType::cpu, 3});
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::backend_unavailable);
    EXPECT_NE(std::string(e.what()).find("cpu:3"), std::string::npos) << e.what();
  }
  if (!m.has_device({DeviceType::hip, 0})) {
    EXPECT_THROW(m.create_stream({DeviceType::hip, 0}), Error);
  }
}

TEST(DeviceManager, ReportsEveryPluginTried) {
  bool cpu = false;
  for (const auto& b : DeviceManager::instance().backends()) {
    if (b.name == "cpu") {
      cpu = b.loaded;
      EXPECT_EQ(b.device_count, 1);
      EXPECT_FALSE(b.path.empty());
    }
  }
  EXPECT_TRUE(cpu);
}

TEST(DeviceManager, PeakStatsAndEmptyCache) {
  auto& m = DeviceManager::instance();
  const Device cpu = Device::cpu();
  { Tensor t = Tensor::empty({4 << 20}, DType::f32, cpu); }
  EXPECT_GE(m.memory_status(cpu).peak_allocated, 16u << 20);
  m.reset_peak_stats(cpu);
  EXPECT_EQ(m.memory_status(cpu).peak_allocated, m.memory_status(cpu).allocated);
  EXPECT_GT(m.memory_status(cpu).reserved, 0u);
  m.empty_cache(cpu);
  EXPECT_EQ(m.memory_status(cpu).reserved, m.memory_status(cpu).allocated);
}

TEST(DeviceManager, ConcurrentFirstUseIsSafe) {
  std::vector<std::thread> threads;
  std::atomic<int> found{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      if (DeviceManager::instance().has_device(Device::cpu())) ++found;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(found, 8);
}

}  // namespace
}  // namespace xhal

namespace xhal {
namespace {

// Run by ctest with an XHAL_CPU_DISABLE name the cpu plugin does not know: an op on the cpu says
// why there is no cpu backend, not only that there is none.
TEST(CpuDisableEnv, OpOnTheCpuSaysWhyItsBackendIsMissing) {
  if (std::getenv("XHAL_CPU_DISABLE") == nullptr) GTEST_SKIP() << "needs XHAL_CPU_DISABLE";
  std::vector<float> x(4, 1.0f), w(4, 1.0f), out(4);
  try {
    ops::rms_norm(TensorView(x.data(), DType::f32, {1, 4}), TensorView(w.data(), DType::f32, {4}), 0.0f,
                  TensorView(out.data(), DType::f32, {1, 4}));
    ADD_FAILURE() << "rms_norm ran without a cpu backend";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::backend_unavailable);
    EXPECT_NE(std::string(e.what()).find("XHAL_CPU_DISABLE names sse9; known: avx512, avx2, avx512_bf16, amx, vnni"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace xhal

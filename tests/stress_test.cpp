// Concurrency stress test, built and run under ThreadSanitizer by .ci/run (and as a plain test by
// .ci/test.sh): 8 threads start the runtime together, then dispatch ops while allocating and
// freeing on several streams, while kernels are registered and unregistered, and while the trace
// and the shadow check are switched on and off, and while the trace waits for device time. Each
// thread checks its own results; TSan checks the rest. The host-streams test plugin (tests/plugins/host_streams_plugin.c) gives the ze
// backend real stream and event handles, so the allocator's cross-stream paths run.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <latch>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "golden/golden.hpp"
#include "xhal/xhal.hpp"

namespace xhal {
namespace {

constexpr int kThreads = 8;
const Device kStreams{DeviceType::ze, 0};

// Runs fn(thread_index) on kThreads threads released together.
template <typename Fn>
void on_threads(Fn fn) {
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      fn(t);
    });
  }
  for (auto& thread : threads) thread.join();
}

// rms_norm of `rows` rows of `n` values filled from `seed`, on `device`, compared with the golden
// reference; returns the worst relative error.
double rms_norm_error(Device device, const Stream* stream, int64_t rows, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  const auto count = size_t(rows * n);
  std::vector<float> x(count), w(static_cast<size_t>(n)), out(count);
  for (auto& v : x) v = dist(rng);
  for (auto& v : w) v = dist(rng);
  Tensor dx = Tensor::empty({rows, n}, DType::f32, device, stream);
  Tensor dw = Tensor::empty({n}, DType::f32, device, stream);
  Tensor dout = Tensor::empty({rows, n}, DType::f32, device, stream);
  dx.copy_from_host(x.data());
  dw.copy_from_host(w.data());
  ops::rms_norm(dx, dw, 1e-6f, dout, stream);
  dout.copy_to_host(out.data());
  const auto exact =
      golden::rms_norm(std::vector<double>(x.begin(), x.end()), std::vector<double>(w.begin(), w.end()), 1e-6);
  double worst = 0;
  for (size_t i = 0; i < count; ++i) {
    worst = std::max(worst, std::abs(out[i] - exact[i]) / (std::abs(exact[i]) + 1e-3));
  }
  return worst;
}

// Must run first in the process: the runtime starts here, on 8 threads at once, each also trying
// to load the same plugin (exactly one wins).
TEST(Stress, ConcurrentStartupAndPluginLoad) {
  std::atomic<int> loaded{0}, refused{0};
  std::atomic<size_t> devices_seen{0};
  on_threads([&](int t) {
    auto& manager = DeviceManager::instance();
    devices_seen += manager.devices().size();
    (void)manager.default_device();
    auto info = manager.load_plugin(XHAL_TEST_STREAMS_PLUGIN);
    (info.loaded ? loaded : refused)++;
    if (!info.loaded) {
      EXPECT_NE(info.reason.find("already provided"), std::string::npos) << info.reason;
    }
    EXPECT_FALSE(registry::list_kernels().empty());
    (void)manager.memory_status(Device::cpu());
    (void)t;
  });
  EXPECT_EQ(loaded, 1);
  EXPECT_EQ(refused, kThreads - 1);
  EXPECT_GE(devices_seen, size_t(kThreads));
  ASSERT_TRUE(DeviceManager::instance().has_device(kStreams));
}

TEST(Stress, DispatchAllocateAndFreeOnManyStreams) {
  auto& manager = DeviceManager::instance();
  ASSERT_TRUE(manager.has_device(kStreams));
  const size_t allocated_before = manager.memory_status(kStreams).allocated;
  std::mutex handoff_mutex;
  std::vector<Tensor> handoff;  // tensors allocated on one thread and freed on another
  std::atomic<int> failures{0};
  on_threads([&](int t) {
    Stream own = manager.create_stream(kStreams);
    std::mt19937 rng{static_cast<uint32_t>(t)};
    for (int i = 0; i < 150; ++i) {
      const int64_t rows = 1 + int64_t(rng() % 7);
      const int64_t n = int64_t(8) << (rng() % 8);  // rows of 32 B .. 4 KiB
      const Stream* stream = (i % 3 == 0) ? nullptr : &own;
      if (rms_norm_error(kStreams, stream, rows, n, rng()) > 1e-4) failures++;
      if (rms_norm_error(Device::cpu(), nullptr, rows, n, rng()) > 1e-4) failures++;
      Tensor big = Tensor::empty({int64_t(1) << (16 + rng() % 6)}, DType::f32, kStreams, &own);
      std::lock_guard lock(handoff_mutex);
      handoff.push_back(std::move(big));
      if (handoff.size() > 6) handoff.erase(handoff.begin(), handoff.begin() + 3);
    }
    own.synchronize();
  });
  EXPECT_EQ(failures, 0);
  handoff.clear();
  EXPECT_EQ(manager.memory_status(kStreams).allocated, allocated_before) << "every block came back";
  manager.empty_cache(kStreams);
}

// Kernels registered and unregistered while other threads dispatch the same op: each call runs
// one complete kernel (the registry holds it while it runs), and every result is right.
xhal_status scalar_rms_norm(void*, const xhal_op_call* call, char*, size_t) {
  const DLTensor* x = call->tensors[XHAL_RMS_NORM_X];
  const auto* in = static_cast<const float*>(x->data);
  const auto* w = static_cast<const float*>(call->tensors[XHAL_RMS_NORM_WEIGHT]->data);
  auto* out = static_cast<float*>(call->tensors[XHAL_RMS_NORM_OUT]->data);
  const int64_t n = x->shape[x->ndim - 1], rows = x->shape[0];
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += double(in[r * n + i]) * in[r * n + i];
    const auto inv =
        float(1.0 / std::sqrt(sum / double(n) + static_cast<const xhal_norm_op_params*>(call->params)->eps));
    for (int64_t i = 0; i < n; ++i) out[r * n + i] = in[r * n + i] * inv * w[i];
  }
  return XHAL_OK;
}

TEST(Stress, RegistryChurnDuringDispatch) {
  std::atomic<int> failures{0};
  std::atomic<bool> done{false};
  std::atomic<int> dispatchers_left{kThreads - 2};
  on_threads([&](int t) {
    if (t < 2) {  // churn until the dispatchers finish
      xhal_kernel_desc desc{};
      desc.struct_size = sizeof desc;
      desc.name = t == 0 ? "stress.rms_norm_a" : "stress.rms_norm_b";
      desc.op = XHAL_OP_RMS_NORM;
      desc.dtype = XHAL_DTYPE_F32;
      desc.priority = 500 + t;
      desc.rtol = desc.atol = 1e-5;
      desc.run = scalar_rms_norm;
      while (!done) {
        const int64_t handle = registry::register_kernel(DeviceType::cpu, desc);
        std::this_thread::yield();
        registry::unregister_kernel(handle);
      }
      return;
    }
    std::mt19937 rng{static_cast<uint32_t>(t)};
    for (int i = 0; i < 300; ++i) {
      if (rms_norm_error(Device::cpu(), nullptr, 1 + rng() % 4, 16 << (rng() % 4), rng()) > 1e-4) failures++;
    }
    if (--dispatchers_left == 0) done = true;
  });
  EXPECT_EQ(failures, 0);
  for (const auto& k : registry::list_kernels()) EXPECT_EQ(k.name.rfind("stress.", 0), std::string::npos);
}

// The trace and the shadow check switched on and off while ops run on every thread.
TEST(Stress, InstrumentationToggledDuringDispatch) {
  const auto trace =
      std::filesystem::temp_directory_path() / ("xhal_stress_trace_" + std::to_string(getpid()) + ".json");
  std::atomic<int> failures{0};
  std::atomic<bool> done{false};
  std::atomic<int> dispatchers_left{kThreads - 1};
  on_threads([&](int t) {
    if (t == 0) {
      for (int round = 0; !done; ++round) {
        start_trace(trace.string());
        set_check_mode(round % 2 ? CheckMode::cpu : CheckMode::off);
        std::this_thread::yield();
        stop_trace();
      }
      set_check_mode(CheckMode::off);
      return;
    }
    std::mt19937 rng{static_cast<uint32_t>(t)};
    for (int i = 0; i < 200; ++i) {
      const Device device = (i % 2) ? Device::cpu() : kStreams;
      if (rms_norm_error(device, nullptr, 1 + rng() % 4, 16 << (rng() % 4), rng()) > 1e-4) failures++;
    }
    if (--dispatchers_left == 0) done = true;
  });
  EXPECT_EQ(failures, 0);
  for (const auto& row : check_summary()) EXPECT_EQ(row.failed, 0) << op_name(row.op);
  std::filesystem::remove(trace);
}

// Device time in the trace: events of ze calls wait for their end event (the test plugin's events
// complete at the second query) and are all written, with device_time_us, by stop_trace.
TEST(Stress, TraceDeviceTimeFromManyThreads) {
  const auto trace =
      std::filesystem::temp_directory_path() / ("xhal_stress_device_time_" + std::to_string(getpid()) + ".json");
  constexpr int kCalls = 40;
  start_trace(trace.string());
  on_threads([&](int t) {
    Stream own = DeviceManager::instance().create_stream(kStreams);
    std::mt19937 rng{static_cast<uint32_t>(t)};
    for (int i = 0; i < kCalls; ++i) (void)rms_norm_error(kStreams, &own, 2, 64, rng());
  });
  stop_trace();
  std::ifstream in(trace);
  int ze_events = 0, timed = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"device\":\"ze:0\"") == std::string::npos) continue;
    ++ze_events;
    if (line.find("\"device_time_us\":") != std::string::npos) ++timed;
  }
  EXPECT_EQ(ze_events, kThreads * kCalls);
  EXPECT_EQ(timed, ze_events);
  std::filesystem::remove(trace);
}

}  // namespace
}  // namespace xhal

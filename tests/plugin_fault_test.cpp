// Fault injection through a plugin (tests/plugins/faulty_kernels_plugin.cpp): kernels that fail
// surface as the right xhal::Error naming the op, the kernel and the cause, and the runtime stays
// usable: the device still allocates and copies, no memory is left allocated, other backends run.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "xhal/xhal.hpp"

namespace xhal {
namespace {

const Device kFaulty{DeviceType::ze, 0};

class PluginFault : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto info = DeviceManager::instance().load_plugin(XHAL_TEST_FAULTY_PLUGIN);
    ASSERT_TRUE(info.loaded) << info.reason;
    ASSERT_EQ(info.device_count, 1);
  }
};

// Runs `op`, expecting an Error of `code` whose text contains every one of `parts`.
template <typename Fn>
void expect_error(Fn op, Errc code, const std::vector<std::string>& parts) {
  try {
    op();
    ADD_FAILURE() << "the op did not fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const auto& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST_F(PluginFault, KernelErrorsSurfaceAsTheRightError) {
  std::vector<float> host(64, 1.0f);
  Tensor x = Tensor::from_host(host.data(), {4, 16}, DType::f32, kFaulty);
  Tensor w = Tensor::from_host(host.data(), {16}, DType::f32, kFaulty);
  Tensor out = Tensor::empty({4, 16}, DType::f32, kFaulty);
  Tensor half_out = Tensor::empty({4, 8}, DType::f32, kFaulty);
  Tensor linear_out = Tensor::empty({4, 4}, DType::f32, kFaulty);
  Tensor linear_w = Tensor::from_host(host.data(), {4, 16}, DType::f32, kFaulty);

  expect_error(
      [&] { ops::rms_norm(x, w, 1e-6f, out); }, Errc::device_error,
      {"xhal::ops::rms_norm", "kernel faulty.rms_norm failed", "illegal memory access", "outputs are undefined"});
  try {
    ops::swiglu(x, x, out);
    ADD_FAILURE() << "swiglu did not fail";
  } catch (const OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("faulty.swiglu failed: simulated: a 64 GiB workspace"), std::string::npos)
        << e.what();
  }
  expect_error([&] { ops::swiglu_packed(x, half_out); }, Errc::internal,
               {"xhal::ops::swiglu_packed", "faulty.swiglu_packed failed: no message"});
  expect_error([&] { ops::linear(x, linear_w, nullptr, linear_out); }, Errc::internal,
               {"xhal::ops::linear", "faulty.linear failed: threw simulated bug in a vendor kernel"});
}

TEST_F(PluginFault, RuntimeStaysUsableAfterKernelFaults) {
  auto& manager = DeviceManager::instance();
  const size_t allocated_before = manager.memory_status(kFaulty).allocated;
  std::vector<float> host(32);
  for (size_t i = 0; i < host.size(); ++i) host[i] = float(i);
  for (int round = 0; round < 3; ++round) {
    Tensor x = Tensor::from_host(host.data(), {2, 16}, DType::f32, kFaulty);
    Tensor out = Tensor::empty({2, 16}, DType::f32, kFaulty);
    EXPECT_THROW(ops::swiglu(x, x, out), OutOfMemoryError);  // takes and returns scratch memory
    Tensor w = Tensor::from_host(host.data(), {16}, DType::f32, kFaulty);
    EXPECT_THROW(ops::rms_norm(x, w, 1e-6f, out), Error);
    std::vector<float> back(32);
    x.copy_to_host(back.data());
    EXPECT_EQ(back, host) << "inputs the failed ops only read are unchanged";
  }
  // Every byte the failed calls took (tensors, scratch) went back.
  EXPECT_EQ(manager.memory_status(kFaulty).allocated, allocated_before);
  manager.synchronize(kFaulty);

  // The CPU backend, and the faulty device's data path, still work.
  Tensor on_faulty = Tensor::from_host(host.data(), {2, 16}, DType::f32, kFaulty);
  Tensor on_cpu = on_faulty.to(Device::cpu());
  std::vector<float> w(16, 1.0f), out(32);
  ops::rms_norm(on_cpu, TensorView(w.data(), DType::f32, {16}), 0.0f, TensorView(out.data(), DType::f32, {2, 16}));
  double mean_square = 0;
  for (int i = 0; i < 16; ++i) mean_square += double(i) * i / 16;
  EXPECT_NEAR(out[15], 15 / std::sqrt(mean_square), 1e-5);
}

}  // namespace
}  // namespace xhal

// Tensor (tensor.hpp): owned memory, host copies, xhal::copy.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <thread>

#include "xhal/xhal.hpp"

namespace xhal {
namespace {

TEST(Tensor, HostRoundTripAndDeviceCopy) {
  std::vector<int32_t> host(100);
  std::iota(host.begin(), host.end(), 0);
  Tensor t = Tensor::from_host(host.data(), {10, 10}, DType::i32, Device::cpu());
  EXPECT_EQ(t.nbytes(), 400u);
  Tensor u = t.to(Device::cpu());
  EXPECT_NE(u.data(), t.data());
  std::vector<int32_t> back(100);
  u.copy_to_host(back.data());
  EXPECT_EQ(back, host);
}

TEST(Tensor, CopyChecksShapesAndLayout) {
  Tensor a = Tensor::empty({4, 4}, DType::f32, Device::cpu());
  Tensor b = Tensor::empty({4, 5}, DType::f32, Device::cpu());
  EXPECT_THROW(copy(a, b), Error);
  EXPECT_THROW(copy(a.view().transpose(0, 1), a), Error);
}

TEST(Tensor, MemoryReturnsToTheAllocator) {
  auto& manager = DeviceManager::instance();
  const size_t before = manager.memory_status(Device::cpu()).allocated;
  {
    Tensor t = Tensor::empty({1 << 20}, DType::f32, Device::cpu());
    EXPECT_GE(manager.memory_status(Device::cpu()).allocated, before + (4u << 20));
  }
  EXPECT_EQ(manager.memory_status(Device::cpu()).allocated, before);
}

}  // namespace
}  // namespace xhal

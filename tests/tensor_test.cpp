// Tensor (tensor.hpp): owned memory, host copies, xhal::copy.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
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

// Copies beyond the caches take the streaming path (all threads, aligned vector stores after an
// unaligned head); sizes and offsets that leave a head and a tail on both sides must copy every
// element and nothing past the end.
TEST(Tensor, LargeHostCopiesAtAnyAlignment) {
  const int64_t n = (int64_t(64) << 20) / 2 + 37;  // f16 elements: 64 MiB and an odd tail
  std::vector<uint16_t> src(size_t(n) + 8), dst(size_t(n) + 8, 0xFFFF);
  for (size_t i = 0; i < src.size(); ++i) src[i] = uint16_t(i * 2654435761u >> 7);
  for (const int offset : {0, 1, 3}) {
    std::fill(dst.begin(), dst.end(), uint16_t(0xFFFF));
    copy(TensorView(dst.data() + offset, DType::f16, {n}), TensorView(src.data() + 1, DType::f16, {n}));
    EXPECT_TRUE(std::equal(src.begin() + 1, src.begin() + 1 + n, dst.begin() + offset)) << "offset " << offset;
    for (int i = 0; i < offset; ++i) EXPECT_EQ(dst[size_t(i)], 0xFFFF) << "written before the start";
    EXPECT_EQ(dst[size_t(n + offset)], 0xFFFF) << "written past the end";
  }
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

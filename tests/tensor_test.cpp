// Tensor (tensor.hpp): owned memory, host copies, xhal::copy.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <vector>
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

TEST(Tensor, CopyAsyncIsOrderedOnItsStream) {
  auto& m = DeviceManager::instance();
  const Device cpu = Device::cpu();
  std::vector<float> values(1000);
  std::iota(values.begin(), values.end(), 1.0f);
  Tensor src = Tensor::from_host(values.data(), {10, 100}, DType::f32, cpu);
  Tensor dst = Tensor::empty({10, 100}, DType::f32, cpu);
  const Stream stream = m.create_stream(cpu);
  copy_async(dst, src, stream);
  stream.synchronize();
  std::vector<float> back(1000);
  dst.copy_to_host(back.data());
  EXPECT_EQ(back, values);
  const auto expect_error = [](const std::function<void()>& call, const char* part) {
    try {
      call();
      ADD_FAILURE() << "no error for " << part;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::invalid_argument) << e.what();
      EXPECT_NE(std::string(e.what()).find("xhal::copy_async"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  Tensor other = Tensor::empty({10, 99}, DType::f32, cpu);
  expect_error([&] { copy_async(other, src, stream); }, "differ in dtype or shape");
  expect_error([&] { copy_async(dst.view().transpose(0, 1), src.view().transpose(0, 1), stream); }, "contiguous");
  const TensorView elsewhere(values.data(), DType::f32, {10, 100}, Device{DeviceType::cuda, 0});  // never read
  expect_error([&] { copy_async(dst, elsewhere, stream); }, "one device");
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

// A byte size that does not fit in 64 bits is refused, never wrapped: 2^62 + 1 floats once became a
// 4-byte tensor that rope_cache then wrote past.
TEST(Tensor, SizesThatOverflowAreRefused) {
  const int64_t huge = (int64_t(1) << 62) + 1;
  for (const auto& make : std::vector<std::function<void()>>{
           [&] { Tensor::empty({huge}, DType::f32, Device::cpu()); }, [&] { TensorView(nullptr, DType::f32, {huge}); },
           [&] {
             TensorView(nullptr, DType::f16, {int64_t(1) << 31, int64_t(1) << 31, 4});
           },
           [&] { TensorView(nullptr, DType::f32, {huge}, {1}); }}) {
    try {
      make();
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::invalid_argument) << e.what();
      EXPECT_NE(std::string(e.what()).find("holds more than 2^63 - 1 bytes"), std::string::npos) << e.what();
    }
  }
  try {
    ops::rope_cache((int64_t(1) << 61) + 1, 2, 1e4);
    ADD_FAILURE() << "rope_cache accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_argument) << e.what();
    EXPECT_NE(std::string(e.what()).find("xhal::ops::rope_cache: argument 'max_pos'"), std::string::npos) << e.what();
  }
  // An empty tensor of any other extent is fine.
  EXPECT_EQ(TensorView(nullptr, DType::f32, {huge, 0}).nbytes(), 0u);
}

// A null host pointer or view is an error naming the argument, never a crash.
TEST(Tensor, NullPointersAreErrors) {
  Tensor t = Tensor::empty({4}, DType::f32, Device::cpu());
  std::vector<float> host(4, 1.0f);
  const auto expect_null_error = [](const std::function<void()>& call, const char* arg) {
    try {
      call();
      ADD_FAILURE() << "accepted a null " << arg;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::invalid_argument) << e.what();
      EXPECT_NE(std::string(e.what()).find(std::string("argument '") + arg + "'"), std::string::npos) << e.what();
    }
  };
  expect_null_error([&] { t.copy_from_host(nullptr); }, "src");
  expect_null_error([&] { t.copy_to_host(nullptr); }, "dst");
  expect_null_error([&] { Tensor::from_host(nullptr, {4}, DType::f32, Device::cpu()); }, "src");
  expect_null_error([&] { copy(TensorView(nullptr, DType::f32, {4}), TensorView(host.data(), DType::f32, {4})); },
                    "dst");
  // A DLTensor's offset is added only to a real pointer.
  const TensorView view(host.data(), DType::f32, {4});
  DLTensor dl = view.to_dlpack();  // points at the view's shape and strides
  dl.data = nullptr;
  dl.byte_offset = 16;
  try {
    TensorView::from_dlpack(dl);
    ADD_FAILURE() << "NULL data with byte_offset 16 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("data is NULL but byte_offset is 16"), std::string::npos) << e.what();
  }
  dl.data = host.data();
  dl.byte_offset = 8;
  EXPECT_EQ(TensorView::from_dlpack(dl).data(), host.data() + 2);
}

}  // namespace
}  // namespace xhal

// TensorView (tensor_view.hpp): shapes, strides, DLPack import and export.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <thread>

#include "xhal/xhal.hpp"

namespace xhal {
namespace {

TEST(TensorView, ContiguousStridesAndSizes) {
  std::vector<float> data(24);
  TensorView v(data.data(), DType::f32, {2, 3, 4});
  EXPECT_EQ(v.ndim(), 3);
  EXPECT_EQ(v.stride(0), 12);
  EXPECT_EQ(v.stride(-1), 1);
  EXPECT_EQ(v.numel(), 24);
  EXPECT_EQ(v.nbytes(), 96u);
  EXPECT_TRUE(v.is_contiguous());
  TensorView t = v.transpose(0, 1);
  EXPECT_EQ(t.size(0), 3);
  EXPECT_EQ(t.stride(0), 4);
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_THROW(v.transpose(0, 3), Error);
}

TEST(TensorView, RejectsBadShapes) {
  EXPECT_THROW(TensorView(nullptr, DType::f32, {1, 2, 3, 4, 5, 6, 7, 8, 9}), Error);
  EXPECT_THROW(TensorView(nullptr, DType::f32, {2, -1}), Error);
  EXPECT_THROW(TensorView(nullptr, DType::f32, {2, 3}, {1}), Error);
  EXPECT_THROW(TensorView(nullptr, DType::f32, {int64_t(1) << 40, int64_t(1) << 40}), Error);
}

TEST(TensorView, DlpackRoundTrip) {
  std::vector<uint16_t> data(64);
  TensorView v(data.data(), DType::bf16, {4, 4, 4}, {16, 1, 4});
  DLTensor t = v.to_dlpack();
  EXPECT_EQ(t.device.device_type, kDLCPU);
  EXPECT_EQ(t.dtype.code, kDLBfloat);
  TensorView back = TensorView::from_dlpack(t);
  EXPECT_EQ(back.data(), v.data());
  EXPECT_EQ(back.stride(1), 1);
  EXPECT_EQ(back.stride(2), 4);
  EXPECT_EQ(back.dtype(), DType::bf16);
}

TEST(TensorView, DlpackImportHonoursOffsetAndNullStrides) {
  std::vector<float> data(16);
  int64_t shape[] = {2, 4};
  DLTensor t{};
  t.data = data.data();
  t.device = {kDLCUDA, 1};
  t.ndim = 2;
  t.dtype = {kDLFloat, 32, 1};
  t.shape = shape;
  t.strides = nullptr;
  t.byte_offset = 8 * sizeof(float);
  TensorView v = TensorView::from_dlpack(t);
  EXPECT_EQ(v.data(), data.data() + 8);
  EXPECT_EQ(v.stride(0), 4);
  EXPECT_EQ(v.device(), (Device{DeviceType::cuda, 1}));
  t.device = {kDLVulkan, 0};
  EXPECT_THROW(TensorView::from_dlpack(t), Error);
}

}  // namespace
}  // namespace xhal

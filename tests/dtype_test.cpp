// Element types and their DLPack codes (dtype.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <thread>

#include "xhal/xhal.hpp"

namespace xhal {
namespace {

TEST(DType, DlpackRoundTrip) {
  for (DType d : {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i32, DType::i64, DType::f8_e4m3,
                  DType::f8_e5m2, DType::i8}) {
    EXPECT_EQ(dtype_from_dlpack(to_dlpack(d)), d) << dtype_name(d);
    EXPECT_EQ(to_dlpack(d).bits, dtype_size(d) * 8);
  }
  // DLPack 1.1's float8_e4m3fn and float8_e5m2 (torch's), 8 bits.
  EXPECT_EQ(dtype_from_dlpack(DLDataType{10, 8, 1}), DType::f8_e4m3);
  EXPECT_EQ(dtype_from_dlpack(DLDataType{12, 8, 1}), DType::f8_e5m2);
  EXPECT_EQ(dtype_name(DType::f8_e4m3), "f8_e4m3");
  EXPECT_TRUE(is_floating(DType::f8_e5m2));
  EXPECT_THROW(dtype_from_dlpack(DLDataType{11, 8, 1}), Error);  // e4m3fnuz: another format
  EXPECT_EQ(dtype_from_dlpack(DLDataType{kDLInt, 8, 1}), DType::i8);
  EXPECT_FALSE(is_floating(DType::i8));
  EXPECT_THROW(dtype_from_dlpack(DLDataType{kDLUInt, 8, 1}), Error);
  EXPECT_THROW(dtype_from_dlpack(DLDataType{kDLFloat, 32, 4}), Error);
}

}  // namespace
}  // namespace xhal

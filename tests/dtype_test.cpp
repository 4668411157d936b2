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
  for (DType d : {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i32, DType::i64}) {
    EXPECT_EQ(dtype_from_dlpack(to_dlpack(d)), d) << dtype_name(d);
    EXPECT_EQ(to_dlpack(d).bits, dtype_size(d) * 8);
  }
  EXPECT_THROW(dtype_from_dlpack(DLDataType{kDLUInt, 8, 1}), Error);
  EXPECT_THROW(dtype_from_dlpack(DLDataType{kDLFloat, 32, 4}), Error);
}

}  // namespace
}  // namespace xhal

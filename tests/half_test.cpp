// f16 and bf16 conversions (half.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <thread>

#include "xhal/xhal.hpp"

namespace xhal {
namespace {

TEST(Half, F16RoundTripsEveryValue) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = f16_to_float(uint16_t(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16_to_float(float_to_f16(f))));
    } else {
      ASSERT_EQ(float_to_f16(f), h) << f;
    }
  }
}

TEST(Half, RoundsToNearestEven) {
  EXPECT_EQ(float_to_f16(1.0f + 1.0f / 2048), 0x3c00);  // tie: stays even
  EXPECT_EQ(float_to_f16(1.0f + 3.0f / 2048), 0x3c02);  // tie: rounds up to even
  EXPECT_EQ(float_to_f16(70000.0f), 0x7c00);  // overflow: infinity
  EXPECT_EQ(float_to_f16(std::ldexp(1.0f, -25)), 0x0000);  // half the smallest subnormal: 0
  EXPECT_EQ(float_to_bf16(1.0f + 1.0f / 256), 0x3f80);  // tie: stays even
  EXPECT_EQ(float_to_bf16(1.0f + 3.0f / 256), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
  EXPECT_EQ(bf16_to_float(float_to_bf16(-2.5f)), -2.5f);
}

}  // namespace
}  // namespace xhal

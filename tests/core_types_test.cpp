// Errors, dtypes, 16-bit conversions and device names (error.hpp, dtype.hpp, half.hpp, device.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "xhal/xhal.hpp"

namespace xhal {
namespace {

TEST(Error, StatusMapsToCodeAndType) {
  try {
    throw_status(XHAL_ERR_OUT_OF_MEMORY, "m");
  } catch (const OutOfMemoryError& e) {
    EXPECT_EQ(e.code(), Errc::out_of_memory);
  }
  try {
    throw_status(XHAL_ERR_TIMEOUT, "t");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::timeout);
    EXPECT_STREQ(errc_name(e.code()), "timeout");
  }
  try {
    throw_status(static_cast<xhal_status>(1234), "odd");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::internal);
  }
}

TEST(DType, DlpackRoundTrip) {
  for (DType d : {DType::f32, DType::f16, DType::bf16, DType::f64, DType::i32, DType::i64}) {
    EXPECT_EQ(dtype_from_dlpack(to_dlpack(d)), d) << dtype_name(d);
    EXPECT_EQ(to_dlpack(d).bits, dtype_size(d) * 8);
  }
  EXPECT_THROW(dtype_from_dlpack(DLDataType{kDLUInt, 8, 1}), Error);
  EXPECT_THROW(dtype_from_dlpack(DLDataType{kDLFloat, 32, 4}), Error);
}

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
  EXPECT_EQ(float_to_f16(1.0f + 1.0f / 2048), 0x3c00);        // tie: stays even
  EXPECT_EQ(float_to_f16(1.0f + 3.0f / 2048), 0x3c02);        // tie: rounds up to even
  EXPECT_EQ(float_to_f16(70000.0f), 0x7c00);                  // overflow: infinity
  EXPECT_EQ(float_to_f16(std::ldexp(1.0f, -25)), 0x0000);     // half the smallest subnormal: 0
  EXPECT_EQ(float_to_bf16(1.0f + 1.0f / 256), 0x3f80);        // tie: stays even
  EXPECT_EQ(float_to_bf16(1.0f + 3.0f / 256), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
  EXPECT_EQ(bf16_to_float(float_to_bf16(-2.5f)), -2.5f);
}

TEST(Device, ParsesNamesAndAliases) {
  EXPECT_EQ(Device::parse("cpu"), Device::cpu());
  EXPECT_EQ(Device::parse("cuda:1"), (Device{DeviceType::cuda, 1}));
  EXPECT_EQ(Device::parse("nvidia"), (Device{DeviceType::cuda, 0}));
  EXPECT_EQ(Device::parse("dcu:3"), (Device{DeviceType::hip, 3}));
  EXPECT_EQ(Device::parse("HYGON"), (Device{DeviceType::hip, 0}));
  EXPECT_EQ(Device::parse("level_zero:2"), (Device{DeviceType::ze, 2}));
  EXPECT_EQ((Device{DeviceType::hip, 2}).str(), "hip:2");
  EXPECT_EQ(Device::cpu().str(), "cpu");
  for (const char* bad : {"tpu", "cuda:", "cuda:-1", "cuda:x", ""}) {
    try {
      Device::parse(bad);
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Errc::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("device '"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace xhal

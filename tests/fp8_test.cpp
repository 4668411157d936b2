// The 8-bit float conversions (fp8.hpp): every code decodes to its value and encodes back, known
// values, and float -> fp8 against a brute-force nearest-even search with saturation.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "xhal/fp8.hpp"

namespace xhal {
namespace {

struct Format {
  const char* name;
  float (*decode)(uint8_t);
  uint8_t (*encode)(float);
  float max;
};

const Format kFormats[] = {{"e4m3", f8_e4m3_to_float, float_to_f8_e4m3, 448.0f},
                           {"e5m2", f8_e5m2_to_float, float_to_f8_e5m2, 57344.0f}};

TEST(Fp8, KnownValues) {
  EXPECT_EQ(f8_e4m3_to_float(0x38), 1.0f);
  EXPECT_EQ(f8_e4m3_to_float(0x7E), 448.0f);
  EXPECT_EQ(f8_e4m3_to_float(0xFE), -448.0f);
  EXPECT_EQ(f8_e4m3_to_float(0x08), std::ldexp(1.0f, -6));  // smallest normal
  EXPECT_EQ(f8_e4m3_to_float(0x01), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_TRUE(std::isnan(f8_e4m3_to_float(0x7F)));
  EXPECT_TRUE(std::signbit(f8_e4m3_to_float(0x80)));
  EXPECT_EQ(f8_e5m2_to_float(0x3C), 1.0f);
  EXPECT_EQ(f8_e5m2_to_float(0x7B), 57344.0f);
  EXPECT_EQ(f8_e5m2_to_float(0x01), std::ldexp(1.0f, -16));
  EXPECT_EQ(f8_e5m2_to_float(0x7C), INFINITY);
  EXPECT_EQ(f8_e5m2_to_float(0xFC), -INFINITY);
  EXPECT_TRUE(std::isnan(f8_e5m2_to_float(0x7D)));
  // Ties go to the even mantissa; beyond the largest finite value, infinities included, saturate.
  EXPECT_EQ(float_to_f8_e4m3(1.0f + 1.0f / 16), 0x38);  // between 1 and 1.125: 1
  EXPECT_EQ(float_to_f8_e4m3(1.0f + 3.0f / 16), 0x3A);  // between 1.125 and 1.25: 1.25
  EXPECT_EQ(float_to_f8_e4m3(std::ldexp(1.0f, -10)), 0x00);  // half the smallest subnormal: 0
  EXPECT_EQ(float_to_f8_e4m3(3 * std::ldexp(1.0f, -10)), 0x02);  // 1.5 units: 2
  EXPECT_EQ(float_to_f8_e4m3(1000.0f), 0x7E);
  EXPECT_EQ(float_to_f8_e4m3(-INFINITY), 0xFE);
  EXPECT_EQ(float_to_f8_e4m3(std::nanf("")) & 0x7F, 0x7F);
  EXPECT_EQ(float_to_f8_e5m2(INFINITY), 0x7B);
  EXPECT_EQ(float_to_f8_e5m2(-1e9f), 0xFB);
  EXPECT_TRUE(std::isnan(f8_e5m2_to_float(float_to_f8_e5m2(std::nanf("")))));
}

TEST(Fp8, EveryCodeRoundTrips) {
  for (const Format& f : kFormats) {
    for (int b = 0; b < 256; ++b) {
      const float v = f.decode(uint8_t(b));
      if (std::isnan(v)) {
        EXPECT_TRUE(std::isnan(f.decode(f.encode(v)))) << f.name << " code " << b;
      } else if (std::isinf(v)) {
        EXPECT_EQ(f.decode(f.encode(v)), std::copysign(f.max, v)) << f.name << " code " << b;  // saturates
      } else {
        EXPECT_EQ(f.encode(v), b) << f.name << " code " << b << " value " << v;
      }
    }
  }
}

// The nearest finite code to x (ties: the even code), saturating at the largest.
uint8_t nearest(const Format& f, float x) {
  const double a = std::fabs(double(x));
  int best = -1;
  double best_distance = INFINITY;
  for (int b = 0; b < 128; ++b) {
    const double v = f.decode(uint8_t(b));
    if (!std::isfinite(v)) continue;
    const double d = std::fabs(v - a);
    if (d < best_distance || (d == best_distance && b % 2 == 0)) best = b, best_distance = d;
  }
  if (a > f.max) best = f.encode(f.max);
  return uint8_t(best | (std::signbit(x) ? 0x80 : 0));
}

TEST(Fp8, NearestEvenAgainstBruteForce) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-20, 17);
  for (const Format& f : kFormats) {
    for (int i = 0; i < 200000; ++i) {
      float x = std::ldexp(mantissa(rng), exponent(rng));
      if (i % 2 == 1) x = -x;
      ASSERT_EQ(f.encode(x), nearest(f, x)) << f.name << " x " << x;
    }
    // Exactly halfway between neighbouring codes, where only the tie rule decides.
    for (int b = 0; b + 1 < 127; ++b) {
      const float lo = f.decode(uint8_t(b)), hi = f.decode(uint8_t(b + 1));
      if (!std::isfinite(hi)) continue;
      const float mid = lo + (hi - lo) / 2;
      ASSERT_EQ(f.encode(mid), b % 2 == 0 ? b : b + 1) << f.name << " between codes " << b << " and " << b + 1;
    }
  }
}

}  // namespace
}  // namespace xhal

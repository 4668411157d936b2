// Conversions between float and the 16-bit float formats, for host code (tests, examples, tools).
// Round to nearest even; NaN stays NaN. Header-only so plugins use it without linking libxhal.
#pragma once

#include <cstdint>
#include <cstring>

namespace xhal {
namespace half_detail {

// std::bit_cast is C++20; public headers compile as C++17.
template <class To, class From>
inline To bits_as(From from) {
  static_assert(sizeof(To) == sizeof(From), "same size");
  To to;
  std::memcpy(&to, &from, sizeof to);
  return to;
}

}  // namespace half_detail

inline float bf16_to_float(uint16_t bits) { return half_detail::bits_as<float>(uint32_t(bits) << 16); }

inline uint16_t float_to_bf16(float value) {
  uint32_t u = half_detail::bits_as<uint32_t>(value);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

inline float f16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24
    const float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  if (exp == 31) return half_detail::bits_as<float>(sign | 0x7f800000u | (mant << 13));
  return half_detail::bits_as<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

inline uint16_t float_to_f16(float f) {
  const uint32_t u = half_detail::bits_as<uint32_t>(f);
  const auto sign = uint16_t((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;  // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: infinity
  if (abs < 0x38800000u) {  // below 2^-14: subnormal or zero
    // Adding 0.5 (2^-1) aligns the f16 subnormal unit 2^-24 with the float's last mantissa bit,
    // so the hardware's round-to-nearest-even does the rounding.
    const float shifted = half_detail::bits_as<float>(abs) + 0.5f;
    return sign | uint16_t(half_detail::bits_as<uint32_t>(shifted) - 0x3f000000u);
  }
  const uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
  return sign | uint16_t((rounded - (112u << 23)) >> 13);
}

}  // namespace xhal

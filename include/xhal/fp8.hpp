// Conversions between float and the 8-bit float formats of the OCP FP8 specification, for host code
// and GPU kernels alike (one definition, so every backend rounds the same way):
//   f8_e4m3: E4M3 as torch.float8_e4m3fn: bias 7, no infinities, largest finite ±448, NaN S.1111.111;
//   f8_e5m2: E5M2 as torch.float8_e5m2: bias 15, infinities, largest finite ±57344.
// float -> fp8 rounds to nearest even and saturates: magnitudes above the largest finite value,
// infinities included, become ±largest (CUDA's __NV_SATFINITE, what quantization kernels use);
// NaN stays NaN. fp8 -> float is exact.
#pragma once

#include <cstdint>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define XHAL_FP8_FN __host__ __device__ inline
#else
#define XHAL_FP8_FN inline
#endif

namespace xhal {

// DLPack 1.1's type codes of the two formats (8 bits, 1 lane); older dlpack.h headers lack the names.
inline constexpr uint8_t kDLPackFloat8E4M3FN = 10, kDLPackFloat8E5M2 = 12;

namespace fp8_detail {

XHAL_FP8_FN uint32_t float_bits(float f) {
  uint32_t u;
  __builtin_memcpy(&u, &f, sizeof u);
  return u;
}

XHAL_FP8_FN float bits_float(uint32_t u) {
  float f;
  __builtin_memcpy(&f, &u, sizeof f);
  return f;
}

// |f| (bits a, a normal or subnormal float below the format's smallest normal) as a multiple of
// 2^min_exp, rounded to nearest even: the format's subnormal mantissa (or its smallest normal).
XHAL_FP8_FN uint32_t round_subnormal(uint32_t a, int min_exp) {
  const int exp = int(a >> 23) - 127;
  if ((a >> 23) == 0) return 0;  // float subnormals are far below every fp8 subnormal
  const uint32_t full = (a & 0x7FFFFFu) | 0x800000u;  // value = full * 2^(exp - 23)
  const int shift = 23 - (exp - min_exp);  // value / 2^min_exp = full >> shift
  if (shift > 31) return 0;
  const uint32_t q = full >> shift, rem = full & ((1u << shift) - 1u), half = 1u << (shift - 1);
  return q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
}

// A normal float's bits rounded to `mant` mantissa bits with exponent bias `bias`: the fp8 code
// without its sign (a carry out of the mantissa moves to the exponent, as it should).
XHAL_FP8_FN uint32_t round_normal(uint32_t a, int mant, int bias) {
  const int drop = 23 - mant;
  const uint32_t rounded = a + ((1u << (drop - 1)) - 1u) + ((a >> drop) & 1u);
  return ((rounded >> 23) - 127u + uint32_t(bias)) << mant | ((rounded >> drop) & ((1u << mant) - 1u));
}

// float -> a format of `mant` mantissa bits and exponent bias `bias`: NaN gives `nan`, magnitudes
// from `largest_bits` (the float bits of the largest finite value) up give `largest`, those below
// `min_normal_bits` go to the subnormal codes (units of 2^min_exp).
XHAL_FP8_FN uint8_t encode(float f, int mant, int bias, uint32_t largest_bits, uint8_t largest, uint8_t nan,
                           uint32_t min_normal_bits, int min_exp) {
  const uint32_t u = float_bits(f), a = u & 0x7FFFFFFFu;
  const uint8_t sign = uint8_t((u >> 24) & 0x80u);
  if (a > 0x7F800000u) return sign | nan;
  if (a >= largest_bits) return sign | largest;  // infinities too: saturate
  if (a < min_normal_bits) return sign | uint8_t(round_subnormal(a, min_exp));
  return sign | uint8_t(round_normal(a, mant, bias));
}

}  // namespace fp8_detail

XHAL_FP8_FN float f8_e4m3_to_float(uint8_t b) {
  const uint32_t sign = uint32_t(b & 0x80u) << 24, e = (b >> 3) & 0xFu, m = b & 0x7u;
  if (e == 0xF && m == 0x7) return fp8_detail::bits_float(sign | 0x7FC00000u);
  if (e == 0) return fp8_detail::bits_float(sign | fp8_detail::float_bits(float(m) * 0.001953125f));  // m * 2^-9
  return fp8_detail::bits_float(sign | (e + 120u) << 23 | m << 20);
}

XHAL_FP8_FN uint8_t float_to_f8_e4m3(float f) {
  // >= 448 (0x43E00000) saturates; below 2^-6 (0x3C800000) in units of 2^-9.
  return fp8_detail::encode(f, 3, 7, 0x43E00000u, 0x7Eu, 0x7Fu, 0x3C800000u, -9);
}

XHAL_FP8_FN float f8_e5m2_to_float(uint8_t b) {
  const uint32_t sign = uint32_t(b & 0x80u) << 24, e = (b >> 2) & 0x1Fu, m = b & 0x3u;
  if (e == 0x1F) return fp8_detail::bits_float(sign | 0x7F800000u | (m != 0 ? 0x400000u : 0u));
  if (e == 0) return fp8_detail::bits_float(sign | fp8_detail::float_bits(float(m) * 1.52587890625e-05f));  // m * 2^-16
  return fp8_detail::bits_float(sign | (e + 112u) << 23 | m << 21);
}

XHAL_FP8_FN uint8_t float_to_f8_e5m2(float f) {
  // >= 57344 (0x47600000) saturates; below 2^-14 (0x38800000) in units of 2^-16.
  return fp8_detail::encode(f, 2, 15, 0x47600000u, 0x7Bu, 0x7Eu, 0x38800000u, -16);
}

}  // namespace xhal

// quantize's and dequantize's arithmetic, which every backend runs as written here (so a scale and
// a code come out the same everywhere): a group's largest |x| (NaN wins), its scale, the code of
// x times the scale's reciprocal, and a code's value times its scale. Codes are fp8 (e4m3, e5m2)
// or int8 (symmetric, ±127), each stored in one byte.
#pragma once

#include <math.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#include "kernels/kernel_registration.hpp"
#include "xhal/fp8.hpp"

namespace xhal::kernels {

enum class QuantFormat : uint8_t { e4m3, e5m2, i8 };

// The format of a code tensor (f8_e4m3, f8_e5m2 or i8, as the front ends allow).
inline QuantFormat quant_format(const DLTensor* codes) {
  return codes->dtype.code == kDLPackFloat8E4M3FN ? QuantFormat::e4m3
         : codes->dtype.code == kDLPackFloat8E5M2 ? QuantFormat::e5m2
                                                  : QuantFormat::i8;
}

// max(|a|, |b|) where a NaN on either side gives NaN.
XHAL_HOST_DEVICE inline float amax_merge(float m, float x) {
  const float a = x < 0.0f ? -x : x;
  return (a != a || a > m) ? a : m;
}

// The format's largest finite value.
XHAL_HOST_DEVICE inline float quant_largest(QuantFormat f) {
  return f == QuantFormat::e4m3 ? 448.0f : f == QuantFormat::e5m2 ? 57344.0f : 127.0f;
}

// A dynamic scale: amax / largest, 1 for a group of zeros (any code times 1 is then exact); NaN or
// infinity for a group holding one.
XHAL_HOST_DEVICE inline float scale_of(float amax, QuantFormat f) {
  return amax == 0.0f ? 1.0f : amax / quant_largest(f);
}

// Codes are of x * (1 / scale): the reciprocal once a group, then a product an element (as vLLM's
// and TensorRT's kernels), both IEEE f32 operations.
XHAL_HOST_DEVICE inline float inverse_scale(float scale) { return 1.0f / scale; }

// int8: the nearest integer (ties to even, the default rounding mode's rint) saturated at ±127 so
// that the codes are symmetric; NaN has no code and becomes 0 (its group's scale is NaN, so
// dequantizing still gives NaN).
XHAL_HOST_DEVICE inline uint8_t int8_code(float v) {
  if (v != v) return 0;
  const float r = rintf(v < -127.0f ? -127.0f : v > 127.0f ? 127.0f : v);
  return uint8_t(int8_t(r));
}

XHAL_HOST_DEVICE inline uint8_t quantize_value(float x, float inverse, QuantFormat f) {
  const float v = x * inverse;
  return f == QuantFormat::e4m3 ? float_to_f8_e4m3(v) : f == QuantFormat::e5m2 ? float_to_f8_e5m2(v) : int8_code(v);
}

XHAL_HOST_DEVICE inline float code_value(uint8_t code, QuantFormat f) {
  return f == QuantFormat::e4m3   ? f8_e4m3_to_float(code)
         : f == QuantFormat::e5m2 ? f8_e5m2_to_float(code)
                                  : float(int8_t(code));
}

XHAL_HOST_DEVICE inline float dequantize_value(uint8_t code, float scale, QuantFormat f) {
  return code_value(code, f) * scale;
}

// linear_int8's output value: the exact int32 sum of code products, converted once, times the
// product of its row's and column's scales plus the bias in one fused operation (a fixed
// rounding everywhere: no compiler may contract it differently).
XHAL_HOST_DEVICE inline float int8_linear_value(int32_t sum, float x_scale, float w_scale, float bias) {
  return fmaf(float(sum), x_scale * w_scale, bias);
}

// The scale of element (row, col): per tensor 0, per row `row`, per block row * groups + col / block.
struct QuantGroups {
  int32_t granularity;
  int64_t block, groups;  // groups a row (per block)
  XHAL_HOST_DEVICE int64_t of(int64_t row, int64_t col) const {
    return granularity == XHAL_QUANT_PER_TENSOR ? 0
           : granularity == XHAL_QUANT_PER_ROW  ? row
                                                : row * groups + col / block;
  }
  // The columns of a group: the whole row, or one block.
  XHAL_HOST_DEVICE int64_t width(int64_t cols) const { return granularity == XHAL_QUANT_PER_BLOCK ? block : cols; }
};

inline QuantGroups quant_groups(const xhal_op_call* c, int64_t cols) {
  const auto& p = op_params<xhal_quantize_op_params>(c);
  const int64_t block = p.granularity == XHAL_QUANT_PER_BLOCK ? p.block : cols;
  return {p.granularity, block > 0 ? block : 1, block > 0 ? (cols + block - 1) / block : 1};
}

}  // namespace xhal::kernels

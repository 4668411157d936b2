// quantize's and dequantize's arithmetic, which every backend runs as written here (so a scale and
// a code come out the same everywhere): a group's largest |x| (NaN wins), its scale, the code of
// x times the scale's reciprocal, and a code's value times its scale.
#pragma once

#include <stdint.h>

#include "kernels/kernel_registration.hpp"
#include "xhal/fp8.hpp"

namespace xhal::kernels {

// max(|a|, |b|) where a NaN on either side gives NaN.
XHAL_HOST_DEVICE inline float amax_merge(float m, float x) {
  const float a = x < 0.0f ? -x : x;
  return (a != a || a > m) ? a : m;
}

// The format's largest finite value.
XHAL_HOST_DEVICE inline float fp8_largest(bool e4m3) { return e4m3 ? 448.0f : 57344.0f; }

// A dynamic scale: amax / largest, 1 for a group of zeros (any code times 1 is then exact); NaN or
// infinity for a group holding one.
XHAL_HOST_DEVICE inline float scale_of(float amax, bool e4m3) { return amax == 0.0f ? 1.0f : amax / fp8_largest(e4m3); }

// Codes are of x * (1 / scale): the reciprocal once a group, then a product an element (as vLLM's
// and TensorRT's kernels), both IEEE f32 operations.
XHAL_HOST_DEVICE inline float inverse_scale(float scale) { return 1.0f / scale; }

XHAL_HOST_DEVICE inline uint8_t quantize_value(float x, float inverse, bool e4m3) {
  const float v = x * inverse;
  return e4m3 ? float_to_f8_e4m3(v) : float_to_f8_e5m2(v);
}

XHAL_HOST_DEVICE inline float dequantize_value(uint8_t code, float scale, bool e4m3) {
  return (e4m3 ? f8_e4m3_to_float(code) : f8_e5m2_to_float(code)) * scale;
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

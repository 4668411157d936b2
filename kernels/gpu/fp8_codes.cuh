// The GPU side of kernels/quantize.hpp's codes: two scaled values to their codes in one conversion
// instruction where the GPU has one, and a chunk of codes stored as one word. Shared by quantize
// and the fp8 KV cache's writes.
#pragma once

#include "kernels/quantize.hpp"
#include "launch.cuh"

namespace xhal::gpu {

// The codes of two scaled values (kernels/quantize.hpp's): for fp8 one conversion instruction for
// both where the GPU has it (sm_89 and later), its NaN codes replaced by fp8.hpp's (the hardware's
// drop the sign), so that every backend writes the same bytes.
__device__ inline uint16_t codes_of_pair(float a, float b, kernels::QuantFormat format) {
  if (format == kernels::QuantFormat::i8) return uint16_t(kernels::int8_code(a) | kernels::int8_code(b) << 8);
  const bool e4m3 = format == kernels::QuantFormat::e4m3;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  uint16_t pair;
  if (e4m3) {
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %2, %1;" : "=h"(pair) : "f"(a), "f"(b));
  } else {
    asm("cvt.rn.satfinite.e5m2x2.f32 %0, %2, %1;" : "=h"(pair) : "f"(a), "f"(b));
  }
  if (a != a || b != b) {
    const uint16_t nan_a = e4m3 ? float_to_f8_e4m3(a) : float_to_f8_e5m2(a);
    const uint16_t nan_b = e4m3 ? float_to_f8_e4m3(b) : float_to_f8_e5m2(b);
    pair = uint16_t((b != b ? nan_b : pair >> 8) << 8 | (a != a ? nan_a : pair & 0xFF));
  }
  return pair;
#else
  return uint16_t(e4m3 ? float_to_f8_e4m3(a) | float_to_f8_e4m3(b) << 8
                       : float_to_f8_e5m2(a) | float_to_f8_e5m2(b) << 8);
#endif
}

// VEC codes stored as one aligned word.
template <int VEC>
struct alignas(VEC) Codes {
  uint8_t b[VEC];
};

// The codes of a chunk's VEC values (a Chunk of element.cuh) times `inverse`: in pairs where VEC is
// even, one at a time where it is not.
template <int VEC, class Values>
__device__ inline Codes<VEC> codes_of(const Values& x, float inverse, kernels::QuantFormat format) {
  Codes<VEC> codes;
  if constexpr (VEC % 2 == 0) {
    for (int k = 0; k < VEC; k += 2) {
      const uint16_t pair = codes_of_pair(x.get(k) * inverse, x.get(k + 1) * inverse, format);
      codes.b[k] = uint8_t(pair), codes.b[k + 1] = uint8_t(pair >> 8);
    }
  } else {
    for (int k = 0; k < VEC; ++k) codes.b[k] = kernels::quantize_value(x.get(k), inverse, format);
  }
  return codes;
}

}  // namespace xhal::gpu

// Element types of the CPU kernels: each loads to f32 and stores from f32 (round to nearest even),
// so every kernel accumulates in f32 whatever the storage type.
#pragma once

#include <cstdint>

#include "xhal/half.hpp"
#include "xhal/plugin.h"

namespace xhal::cpu {

struct F32 {
  using Storage = float;
  static constexpr xhal_dtype kDType = XHAL_DTYPE_F32;
  static float load(float v) { return v; }
  static float store(float v) { return v; }
};

struct F16 {
  using Storage = uint16_t;
  static constexpr xhal_dtype kDType = XHAL_DTYPE_F16;
  static float load(uint16_t v) { return f16_to_float(v); }
  static uint16_t store(float v) { return float_to_f16(v); }
};

struct BF16 {
  using Storage = uint16_t;
  static constexpr xhal_dtype kDType = XHAL_DTYPE_BF16;
  static float load(uint16_t v) { return bf16_to_float(v); }
  static uint16_t store(float v) { return float_to_bf16(v); }
};

// bf16 for the SIMD kernels on CPUs with AVX512_BF16: f32 is rounded to bf16 by the CPU's own
// instruction (vcvtneps2bf16, round to nearest even, NaN kept) instead of integer arithmetic.
struct BF16Native : BF16 {
  static constexpr bool kNativeConvert = true;
};

// Converts n contiguous elements to f32.
template <class E>
inline void load_row(const typename E::Storage* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = E::load(src[i]);
}

template <class E>
inline void store_row(const float* src, typename E::Storage* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = E::store(src[i]);
}

}  // namespace xhal::cpu

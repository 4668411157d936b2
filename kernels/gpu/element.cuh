// Element types of the GPU kernels: load to f32, store from f32 (round to nearest even), and
// 16-byte vectors of kVec elements for the memory-bound kernels.
#pragma once

#include <cstdint>

#include "vendor.cuh"
#include "xhal/plugin.h"

namespace xhal::gpu {

struct F32 {
  using T = float;
  static constexpr xhal_dtype kDType = XHAL_DTYPE_F32;
  __device__ static float load(float v) { return v; }
  __device__ static float store(float v) { return v; }
};

struct F16 {
  using T = f16_t;
  static constexpr xhal_dtype kDType = XHAL_DTYPE_F16;
  __device__ static float load(f16_t v) { return __half2float(v); }
  __device__ static f16_t store(float v) { return __float2half_rn(v); }
};

struct BF16 {
  using T = bf16_t;
  static constexpr xhal_dtype kDType = XHAL_DTYPE_BF16;
  __device__ static float load(bf16_t v) { return bf16_to_float(v); }
  __device__ static bf16_t store(float v) { return float_to_bf16(v); }
};

// kVec elements of E in one 16-byte access.
template <class E>
struct Vec {
  static constexpr int kVec = 16 / sizeof(typename E::T);
  union {
    vec16_t raw;
    typename E::T v[kVec];
  };
  __device__ static Vec load_from(const typename E::T* p) {
    Vec x;
    x.raw = *reinterpret_cast<const vec16_t*>(p);
    return x;
  }
  __device__ void store_to(typename E::T* p) const { *reinterpret_cast<vec16_t*>(p) = raw; }
};

// Loads VEC elements at p as one 16-byte vector (VEC > 1) or one scalar.
template <class E, int VEC>
struct Chunk {
  Vec<E> v;  // VEC == 1 uses v.v[0] only
  __device__ void load(const typename E::T* p) {
    if constexpr (VEC > 1)
      v = Vec<E>::load_from(p);
    else
      v.v[0] = *p;
  }
  __device__ void store(typename E::T* p) const {
    if constexpr (VEC > 1)
      v.store_to(p);
    else
      *p = v.v[0];
  }
  // Element k as f32. bf16 widens by a shift or a mask of the 32-bit word holding it (the same
  // value as E::load, without extracting the 16-bit half first).
  __device__ float get(int k) const {
    if constexpr (VEC > 1 && E::kDType == XHAL_DTYPE_BF16) {
      const uint32_t word = reinterpret_cast<const uint32_t*>(&v.raw)[k / 2];
      return __uint_as_float(k % 2 == 0 ? word << 16 : word & 0xFFFF0000u);
    } else {
      return E::load(v.v[k]);
    }
  }
  // Sets the elements from f32 values, rounded to nearest even: bf16 two to a conversion where the
  // vendor has one (the same bits as E::store each).
  __device__ void set(const float (&f)[VEC]) {
    if constexpr (VEC > 1 && E::kDType == XHAL_DTYPE_BF16) {
      for (int j = 0; j < VEC / 2; ++j) floats_to_bf16_pair(f[2 * j], f[2 * j + 1], &v.v[2 * j]);
    } else {
      for (int k = 0; k < VEC; ++k) v.v[k] = E::store(f[k]);
    }
  }
};

// Element i of a rank-1 index tensor (i32, or i64 when `wide`; `stride` in elements), as int64:
// the GPU side of the CPU kernels' index_at.
__device__ inline int64_t index_at(const void* data, int64_t stride, bool wide, int64_t i) {
  return wide ? static_cast<const int64_t*>(data)[i * stride] : static_cast<const int32_t*>(data)[i * stride];
}

}  // namespace xhal::gpu

// The one place where CUDA and HIP differ for the kernels in kernels/gpu: 16-bit types (bf16
// conversions round to nearest even on both), the 16-byte vector type, warp width, warp shuffles
// and shared-memory limits; the runtime API names come from vendor_runtime.hpp. Kernels include
// only this header for vendor things and never hard-code the warp width.
#pragma once

#include "vendor_runtime.hpp"

#if defined(XHAL_GPU_HIP)
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>

using f16_t = __half;
// HIP's uint4 has a user-defined assignment (so it cannot sit in a union); clang's own vector
// type is a plain 16-byte value.
typedef unsigned int vec16_t __attribute__((ext_vector_type(4)));
// ROCm 5.7 and later name bf16 as CUDA does; earlier releases (Debian's 5.2) have hip_bfloat16.
#if __has_include(<hip/hip_bf16.h>)
#include <hip/hip_bf16.h>
using bf16_t = __hip_bfloat16;
__device__ inline float bf16_to_float(bf16_t v) { return __bfloat162float(v); }
__device__ inline bf16_t float_to_bf16(float v) { return __float2bfloat16(v); }
#else
#include <hip/hip_bfloat16.h>
using bf16_t = hip_bfloat16;
__device__ inline float bf16_to_float(bf16_t v) { return float(v); }
__device__ inline bf16_t float_to_bf16(float v) { return hip_bfloat16::round_to_bfloat16(v); }
#endif
__device__ inline void floats_to_bf16_pair(float a, float b, bf16_t* out) {
  out[0] = float_to_bf16(a);
  out[1] = float_to_bf16(b);
}

inline constexpr int kWarpSize = 64;  // a wavefront
// Dynamic shared memory one block may use: the LDS of a workgroup on CDNA (gfx906 to gfx940).
inline constexpr int kMaxDynamicSharedBytes = 64 * 1024;

__device__ inline float warp_shfl_xor(float v, int mask) { return __shfl_xor(v, mask); }
__device__ inline float warp_shfl(float v, int lane) { return __shfl(v, lane); }
// A wavefront runs in lockstep: ordering its shared-memory accesses is all a warp barrier needs.
__device__ inline void warp_sync() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
  __builtin_amdgcn_wave_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}
// HIP has no named barriers: the whole block waits, so every thread of the block must reach each
// call (kernels that use it keep their groups in lockstep).
__device__ inline void group_barrier(int, int) { __syncthreads(); }
inline constexpr int kMaxGroupBarriers = 8;
// Kernel arguments live in memory that dynamic indexing reads as it is.
#define XHAL_GRID_CONSTANT
#else
#include <cuda_bf16.h>
#include <cuda_fp16.h>

using bf16_t = __nv_bfloat16;
using f16_t = __half;
using vec16_t = uint4;
__device__ inline float bf16_to_float(bf16_t v) { return __bfloat162float(v); }
__device__ inline bf16_t float_to_bf16(float v) { return __float2bfloat16_rn(v); }
// out[0], out[1] = a, b rounded in one conversion (out 4-byte aligned).
__device__ inline void floats_to_bf16_pair(float a, float b, bf16_t* out) {
  *reinterpret_cast<__nv_bfloat162*>(out) = __floats2bfloat162_rn(a, b);
}

inline constexpr int kWarpSize = 32;
// Dynamic shared memory one block may use once opted in (sm_80 and later allow more).
inline constexpr int kMaxDynamicSharedBytes = 200 * 1024;

__device__ inline float warp_shfl_xor(float v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }
__device__ inline float warp_shfl(float v, int lane) { return __shfl_sync(0xffffffffu, v, lane); }
__device__ inline void warp_sync() { __syncwarp(); }
// Waits for the `threads` threads (whole warps) that use barrier `id` (1..kMaxGroupBarriers; 0 is
// __syncthreads'), so groups of warps of one block synchronize without waiting for each other.
__device__ inline void group_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;" : : "r"(id), "r"(threads) : "memory");
}
inline constexpr int kMaxGroupBarriers = 15;
// A kernel argument indexed at run time is read in place instead of copied to local memory.
#define XHAL_GRID_CONSTANT __grid_constant__
#endif

// Sum and max over the lanes of one warp.
__device__ inline float warp_sum(float v) {
  for (int m = kWarpSize / 2; m > 0; m /= 2) v += warp_shfl_xor(v, m);
  return v;
}
__device__ inline float warp_max(float v) {
  for (int m = kWarpSize / 2; m > 0; m /= 2) v = fmaxf(v, warp_shfl_xor(v, m));
  return v;
}

// Sum (or max, kMax) over a whole block; `scratch` holds one float per warp. All threads get the
// result.
template <bool kMax = false>
__device__ inline float block_reduce(float v, float* scratch) {
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int warps = (blockDim.x + kWarpSize - 1) / kWarpSize;
  v = kMax ? warp_max(v) : warp_sum(v);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float result = scratch[0];
  for (int w = 1; w < warps; ++w) result = kMax ? fmaxf(result, scratch[w]) : result + scratch[w];
  return result;
}
__device__ inline float block_sum(float v, float* scratch) { return block_reduce(v, scratch); }
__device__ inline float block_max(float v, float* scratch) { return block_reduce<true>(v, scratch); }

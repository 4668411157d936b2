// The one place where CUDA and HIP differ for the kernels in kernels/gpu: runtime names, 16-bit
// types, warp width and warp shuffles. Kernels include only this header for vendor things and never
// hard-code the warp width.
#pragma once

#if defined(__HIPCC__)
#include <hip/hip_bf16.h>
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>

using gpuStream_t = hipStream_t;
using gpuError_t = hipError_t;
using bf16_t = __hip_bfloat16;
using f16_t = __half;
#define gpuSuccess hipSuccess
#define gpuGetLastError hipGetLastError
#define gpuGetErrorString hipGetErrorString
#define gpuFuncSetAttribute hipFuncSetAttribute
#define gpuFuncAttributeMaxDynamicSharedMemorySize hipFuncAttributeMaxDynamicSharedMemorySize
#define XHAL_GPU_BACKEND "hip"
inline constexpr int kWarpSize = 64;

__device__ inline float warp_shfl_xor(float v, int mask) { return __shfl_xor(v, mask); }
__device__ inline float warp_shfl(float v, int lane) { return __shfl(v, lane); }
#else
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

using gpuStream_t = cudaStream_t;
using gpuError_t = cudaError_t;
using bf16_t = __nv_bfloat16;
using f16_t = __half;
#define gpuSuccess cudaSuccess
#define gpuGetLastError cudaGetLastError
#define gpuGetErrorString cudaGetErrorString
#define gpuFuncSetAttribute cudaFuncSetAttribute
#define gpuFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize
#define XHAL_GPU_BACKEND "cuda"
inline constexpr int kWarpSize = 32;

__device__ inline float warp_shfl_xor(float v, int mask) {
  return __shfl_xor_sync(0xffffffffu, v, mask);
}
__device__ inline float warp_shfl(float v, int lane) { return __shfl_sync(0xffffffffu, v, lane); }
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

// Sum over a whole block; `scratch` holds one float per warp. All threads get the result.
__device__ inline float block_sum(float v, float* scratch) {
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int warps = (blockDim.x + kWarpSize - 1) / kWarpSize;
  v = warp_sum(v);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < warps; ++w) total += scratch[w];
  return total;
}

// The runtime API names the kernels' launch code uses, for CUDA or HIP: error type and checks,
// current device, device attributes (device_attribute reads one once per device), the dynamic
// shared memory opt-in, an async memset. Host code compiled by a plain C++ compiler may include it
// too. The device glue's names (memory, streams, events,
// properties, collectives) are the backends' own: backends/gpu/vendor_device_api.hpp.
// HIP is chosen when hipcc compiles (__HIPCC__) or the HIP headers are set up for AMD
// (__HIP_PLATFORM_AMD__, which the HIP plugin defines for its host code).
#pragma once

#include <atomic>

#if defined(__HIPCC__) || defined(__HIP_PLATFORM_AMD__)
#define XHAL_GPU_HIP 1
#include <hip/hip_runtime_api.h>

#define XHAL_GPU_BACKEND "hip"

using gpuError_t = hipError_t;
using gpuStream_t = hipStream_t;
#define gpuSuccess hipSuccess
#define gpuGetLastError hipGetLastError
#define gpuGetErrorString hipGetErrorString
#define gpuGetDevice hipGetDevice
#define gpuSetDevice hipSetDevice
#define gpuDeviceGetAttribute hipDeviceGetAttribute
#define gpuDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
#define gpuFuncSetAttribute hipFuncSetAttribute
#define gpuFuncAttributeMaxDynamicSharedMemorySize hipFuncAttributeMaxDynamicSharedMemorySize
#define gpuOccupancyMaxActiveBlocksPerMultiprocessor hipOccupancyMaxActiveBlocksPerMultiprocessor
#define gpuMemsetAsync hipMemsetAsync
#else
#include <cuda_runtime.h>

#define XHAL_GPU_BACKEND "cuda"

using gpuError_t = cudaError_t;
using gpuStream_t = cudaStream_t;
#define gpuSuccess cudaSuccess
#define gpuGetLastError cudaGetLastError
#define gpuGetErrorString cudaGetErrorString
#define gpuGetDevice cudaGetDevice
#define gpuSetDevice cudaSetDevice
#define gpuDeviceGetAttribute cudaDeviceGetAttribute
#define gpuDevAttrMultiProcessorCount cudaDevAttrMultiProcessorCount
#define gpuFuncSetAttribute cudaFuncSetAttribute
#define gpuFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize
#define gpuOccupancyMaxActiveBlocksPerMultiprocessor cudaOccupancyMaxActiveBlocksPerMultiprocessor
#define gpuMemsetAsync cudaMemsetAsync
#endif

namespace xhal::gpu {

// An attribute of `device` (gpuDevAttr...), read from the runtime once per device and cached;
// 0 when the runtime cannot tell.
template <auto kAttribute>
int device_attribute(int device) {
  static std::atomic<int> cached[64];  // the value + 1; 0 = not read yet
  if (device < 0 || device >= 64) return 0;
  int stored = cached[device].load(std::memory_order_relaxed);
  if (stored == 0) {
    int value = 0;
    if (gpuDeviceGetAttribute(&value, kAttribute, device) != gpuSuccess) value = 0;
    stored = value + 1;
    cached[device].store(stored, std::memory_order_relaxed);
  }
  return stored - 1;
}

}  // namespace xhal::gpu

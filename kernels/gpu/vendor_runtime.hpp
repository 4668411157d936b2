// The runtime API names the kernels' launch code uses, for CUDA or HIP: error type and checks,
// current device, device attributes, the dynamic shared memory opt-in, an async memset. Host code
// compiled by a plain C++ compiler may include it too. The device glue's names (memory, streams, events,
// properties, collectives) are the backends' own: backends/gpu/vendor_device_api.hpp.
// HIP is chosen when hipcc compiles (__HIPCC__) or the HIP headers are set up for AMD
// (__HIP_PLATFORM_AMD__, which the HIP plugin defines for its host code).
#pragma once

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

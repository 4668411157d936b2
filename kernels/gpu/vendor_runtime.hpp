// The runtime side of the CUDA/HIP difference, for host code compiled by a plain C++ compiler too
// (the plugins' device glue and collectives in backends/gpu): runtime API names, error codes, the
// DLPack device type and the vendor's collectives library. vendor.cuh adds the device side.
// HIP is chosen when hipcc compiles (__HIPCC__) or the HIP headers are set up for AMD
// (__HIP_PLATFORM_AMD__, which the HIP plugin defines for its host code).
#pragma once

#include <cstddef>
#include <cstdio>

#include <dlpack/dlpack.h>

#if defined(__HIPCC__) || defined(__HIP_PLATFORM_AMD__)
#define XHAL_GPU_HIP 1
#include <hip/hip_runtime_api.h>

#define XHAL_GPU_BACKEND "hip"
#define XHAL_GPU_RUNTIME "HIP"
#define XHAL_CCL_ENGINE "rccl"
#define XHAL_CCL_NAME "RCCL"
#define XHAL_CCL_LIBRARY "librccl.so.1"
inline constexpr DLDeviceType kGpuDLDeviceType = kDLROCM;

using gpuError_t = hipError_t;
using gpuStream_t = hipStream_t;
using gpuEvent_t = hipEvent_t;
using gpuDeviceProp_t = hipDeviceProp_t;
using gpuMemcpyKind = hipMemcpyKind;
#define gpuSuccess hipSuccess
#define gpuErrorMemoryAllocation hipErrorOutOfMemory
#define gpuErrorNotReady hipErrorNotReady
#define gpuErrorInvalidValue hipErrorInvalidValue
#define gpuErrorInvalidDevice hipErrorInvalidDevice
#define gpuErrorInvalidDevicePointer hipErrorInvalidDevicePointer
#define gpuErrorNoDevice hipErrorNoDevice
#define gpuErrorInsufficientDriver hipErrorInsufficientDriver
#define gpuGetLastError hipGetLastError
#define gpuGetErrorName hipGetErrorName
#define gpuGetErrorString hipGetErrorString
#define gpuRuntimeGetVersion hipRuntimeGetVersion
#define gpuDriverGetVersion hipDriverGetVersion
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuGetDeviceProperties hipGetDeviceProperties
#define gpuDeviceGetAttribute hipDeviceGetAttribute
#define gpuDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
#define gpuGetDevice hipGetDevice
#define gpuSetDevice hipSetDevice
#define gpuMemGetInfo hipMemGetInfo
#define gpuMalloc hipMalloc
#define gpuFree hipFree
#define gpuMemcpyAsync hipMemcpyAsync
#define gpuMemcpyHostToDevice hipMemcpyHostToDevice
#define gpuMemcpyDeviceToHost hipMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define gpuStreamCreateWithFlags hipStreamCreateWithFlags
#define gpuStreamNonBlocking hipStreamNonBlocking
#define gpuStreamDestroy hipStreamDestroy
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuStreamWaitEvent hipStreamWaitEvent
#define gpuDeviceSynchronize hipDeviceSynchronize
#define gpuEventCreateWithFlags hipEventCreateWithFlags
#define gpuEventDisableTiming hipEventDisableTiming
#define gpuEventDefault hipEventDefault
#define gpuEventElapsedTime hipEventElapsedTime
#define gpuEventDestroy hipEventDestroy
#define gpuEventRecord hipEventRecord
#define gpuEventQuery hipEventQuery
#define gpuEventSynchronize hipEventSynchronize
#define gpuFuncSetAttribute hipFuncSetAttribute
#define gpuFuncAttributeMaxDynamicSharedMemorySize hipFuncAttributeMaxDynamicSharedMemorySize

// Major and minor of a version from hipRuntimeGetVersion/hipDriverGetVersion (major * 10^7 +
// minor * 10^5 + patch).
inline void gpu_version(int encoded, int* major, int* minor) {
  *major = encoded / 10000000, *minor = encoded / 100000 % 100;
}

// "gfx90a" from "gfx90a:sramecc+:xnack-".
inline void gpu_arch_name(const gpuDeviceProp_t& p, char* out, size_t len) {
  int n = 0;
  while (p.gcnArchName[n] != '\0' && p.gcnArchName[n] != ':') ++n;
  std::snprintf(out, len, "%.*s", n, p.gcnArchName);
}
#else
#include <cuda_runtime.h>

#define XHAL_GPU_BACKEND "cuda"
#define XHAL_GPU_RUNTIME "CUDA"
#define XHAL_CCL_ENGINE "nccl"
#define XHAL_CCL_NAME "NCCL"
#define XHAL_CCL_LIBRARY "libnccl.so.2"
inline constexpr DLDeviceType kGpuDLDeviceType = kDLCUDA;

using gpuError_t = cudaError_t;
using gpuStream_t = cudaStream_t;
using gpuEvent_t = cudaEvent_t;
using gpuDeviceProp_t = cudaDeviceProp;
using gpuMemcpyKind = cudaMemcpyKind;
#define gpuSuccess cudaSuccess
#define gpuErrorMemoryAllocation cudaErrorMemoryAllocation
#define gpuErrorNotReady cudaErrorNotReady
#define gpuErrorInvalidValue cudaErrorInvalidValue
#define gpuErrorInvalidDevice cudaErrorInvalidDevice
#define gpuErrorInvalidDevicePointer cudaErrorInvalidDevicePointer
#define gpuErrorNoDevice cudaErrorNoDevice
#define gpuErrorInsufficientDriver cudaErrorInsufficientDriver
#define gpuGetLastError cudaGetLastError
#define gpuGetErrorName cudaGetErrorName
#define gpuGetErrorString cudaGetErrorString
#define gpuRuntimeGetVersion cudaRuntimeGetVersion
#define gpuDriverGetVersion cudaDriverGetVersion
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuGetDeviceProperties cudaGetDeviceProperties
#define gpuDeviceGetAttribute cudaDeviceGetAttribute
#define gpuDevAttrMultiProcessorCount cudaDevAttrMultiProcessorCount
#define gpuGetDevice cudaGetDevice
#define gpuSetDevice cudaSetDevice
#define gpuMemGetInfo cudaMemGetInfo
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuMemcpyHostToDevice cudaMemcpyHostToDevice
#define gpuMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define gpuStreamCreateWithFlags cudaStreamCreateWithFlags
#define gpuStreamNonBlocking cudaStreamNonBlocking
#define gpuStreamDestroy cudaStreamDestroy
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuStreamWaitEvent cudaStreamWaitEvent
#define gpuDeviceSynchronize cudaDeviceSynchronize
#define gpuEventCreateWithFlags cudaEventCreateWithFlags
#define gpuEventDisableTiming cudaEventDisableTiming
#define gpuEventDefault cudaEventDefault
#define gpuEventElapsedTime cudaEventElapsedTime
#define gpuEventDestroy cudaEventDestroy
#define gpuEventRecord cudaEventRecord
#define gpuEventQuery cudaEventQuery
#define gpuEventSynchronize cudaEventSynchronize
#define gpuFuncSetAttribute cudaFuncSetAttribute
#define gpuFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize

// Major and minor of a version from cudaRuntimeGetVersion/cudaDriverGetVersion (1000 * major +
// 10 * minor).
inline void gpu_version(int encoded, int* major, int* minor) { *major = encoded / 1000, *minor = encoded % 1000 / 10; }

// "sm_90" from compute capability 9.0.
inline void gpu_arch_name(const gpuDeviceProp_t& p, char* out, size_t len) {
  std::snprintf(out, len, "sm_%d%d", p.major, p.minor);
}
#endif

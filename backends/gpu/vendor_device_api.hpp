// The device glue's side of the CUDA/HIP difference, for the plugins' host code (backends/gpu):
// the runtime's name, memory, streams, events, properties, versions, error codes, the DLPack
// device type and the vendor's collectives library. The names the kernels share come from
// kernels/gpu/vendor_runtime.hpp.
#pragma once

#include <cstddef>
#include <cstdio>

#include <dlpack/dlpack.h>

#include "kernels/gpu/vendor_runtime.hpp"

#if defined(XHAL_GPU_HIP)

#define XHAL_GPU_RUNTIME "HIP"
#define XHAL_CCL_ENGINE "rccl"
#define XHAL_CCL_NAME "RCCL"
#define XHAL_CCL_LIBRARY "librccl.so.1"
inline constexpr DLDeviceType kGpuDLDeviceType = kDLROCM;

using gpuEvent_t = hipEvent_t;
using gpuDeviceProp_t = hipDeviceProp_t;
using gpuMemcpyKind = hipMemcpyKind;
#define gpuErrorMemoryAllocation hipErrorOutOfMemory
#define gpuErrorNotReady hipErrorNotReady
#define gpuErrorInvalidValue hipErrorInvalidValue
#define gpuErrorInvalidDevice hipErrorInvalidDevice
#define gpuErrorInvalidDevicePointer hipErrorInvalidDevicePointer
#define gpuErrorNoDevice hipErrorNoDevice
#define gpuErrorInsufficientDriver hipErrorInsufficientDriver
#define gpuGetErrorName hipGetErrorName
#define gpuRuntimeGetVersion hipRuntimeGetVersion
#define gpuDriverGetVersion hipDriverGetVersion
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuGetDeviceProperties hipGetDeviceProperties
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

#define XHAL_GPU_RUNTIME "CUDA"
#define XHAL_CCL_ENGINE "nccl"
#define XHAL_CCL_NAME "NCCL"
#define XHAL_CCL_LIBRARY "libnccl.so.2"
inline constexpr DLDeviceType kGpuDLDeviceType = kDLCUDA;

using gpuEvent_t = cudaEvent_t;
using gpuDeviceProp_t = cudaDeviceProp;
using gpuMemcpyKind = cudaMemcpyKind;
#define gpuErrorMemoryAllocation cudaErrorMemoryAllocation
#define gpuErrorNotReady cudaErrorNotReady
#define gpuErrorInvalidValue cudaErrorInvalidValue
#define gpuErrorInvalidDevice cudaErrorInvalidDevice
#define gpuErrorInvalidDevicePointer cudaErrorInvalidDevicePointer
#define gpuErrorNoDevice cudaErrorNoDevice
#define gpuErrorInsufficientDriver cudaErrorInsufficientDriver
#define gpuGetErrorName cudaGetErrorName
#define gpuRuntimeGetVersion cudaRuntimeGetVersion
#define gpuDriverGetVersion cudaDriverGetVersion
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuGetDeviceProperties cudaGetDeviceProperties
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

// Major and minor of a version from cudaRuntimeGetVersion/cudaDriverGetVersion (1000 * major +
// 10 * minor).
inline void gpu_version(int encoded, int* major, int* minor) { *major = encoded / 1000, *minor = encoded % 1000 / 10; }

// "sm_90" from compute capability 9.0.
inline void gpu_arch_name(const gpuDeviceProp_t& p, char* out, size_t len) {
  std::snprintf(out, len, "sm_%d%d", p.major, p.minor);
}
#endif

#include "gpu_status.hpp"

#include <cstdio>

namespace xhal::gpu {

xhal_status check(gpuError_t err, const char* what, char* msg, size_t len) {
  if (err == gpuSuccess) return XHAL_OK;
  (void)gpuGetLastError();  // clear the non-sticky error so the next call starts clean
  if (msg != nullptr && len > 0) {
    std::snprintf(msg, len, "%s: %s: %s", what, gpuGetErrorName(err), gpuGetErrorString(err));
  }
  switch (err) {
    case gpuErrorMemoryAllocation: return XHAL_ERR_OUT_OF_MEMORY;
    case gpuErrorNotReady: return XHAL_NOT_READY;
    case gpuErrorInvalidValue:
    case gpuErrorInvalidDevice:
    case gpuErrorInvalidDevicePointer: return XHAL_ERR_INVALID_ARGUMENT;
    case gpuErrorNoDevice:
    case gpuErrorInsufficientDriver: return XHAL_ERR_BACKEND_UNAVAILABLE;
    default: return XHAL_ERR_DEVICE;
  }
}

}  // namespace xhal::gpu

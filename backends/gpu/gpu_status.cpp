#include "gpu_status.hpp"

namespace xhal::gpu {
namespace {
thread_local std::string t_last_error;
}  // namespace

void set_last_error(std::string message) { t_last_error = std::move(message); }
const char* last_error() { return t_last_error.c_str(); }

xhal_status check(gpuError_t err, const char* what) {
  if (err == gpuSuccess) return XHAL_OK;
  (void)gpuGetLastError();  // clear the non-sticky error so the next call starts clean
  set_last_error(std::string(what) + ": " + gpuGetErrorName(err) + ": " + gpuGetErrorString(err));
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

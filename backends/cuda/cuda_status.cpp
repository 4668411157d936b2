#include "cuda_status.hpp"

namespace xhal::cuda {
namespace {
thread_local std::string t_last_error;
}  // namespace

void set_last_error(std::string message) { t_last_error = std::move(message); }
const char* last_error() { return t_last_error.c_str(); }

xhal_status check(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return XHAL_OK;
  cudaGetLastError();  // clear the sticky-free error so the next call starts clean
  set_last_error(std::string(what) + ": " + cudaGetErrorName(err) + ": " + cudaGetErrorString(err));
  switch (err) {
    case cudaErrorMemoryAllocation: return XHAL_ERR_OUT_OF_MEMORY;
    case cudaErrorNotReady: return XHAL_NOT_READY;
    case cudaErrorInvalidValue:
    case cudaErrorInvalidDevice:
    case cudaErrorInvalidDevicePointer: return XHAL_ERR_INVALID_ARGUMENT;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver: return XHAL_ERR_BACKEND_UNAVAILABLE;
    default: return XHAL_ERR_DEVICE;
  }
}

xhal_status check(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return XHAL_OK;
  set_last_error(std::string(what) + ": cuBLASLt status " + std::to_string(int(status)));
  switch (status) {
    case CUBLAS_STATUS_ALLOC_FAILED: return XHAL_ERR_OUT_OF_MEMORY;
    case CUBLAS_STATUS_INVALID_VALUE: return XHAL_ERR_INVALID_ARGUMENT;
    case CUBLAS_STATUS_NOT_SUPPORTED: return XHAL_ERR_UNSUPPORTED;
    default: return XHAL_ERR_DEVICE;
  }
}

}  // namespace xhal::cuda

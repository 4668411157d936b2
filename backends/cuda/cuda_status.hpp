// Mapping CUDA runtime and cuBLASLt errors to xhal statuses, in one place, with the message kept
// for last_error() (per thread).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <string>

#include "xhal/status.h"

namespace xhal::cuda {

void set_last_error(std::string message);
const char* last_error();

// XHAL_OK for cudaSuccess; otherwise the matching status, with "<what>: <cuda message>" recorded.
xhal_status check(cudaError_t err, const char* what);
xhal_status check(cublasStatus_t status, const char* what);

}  // namespace xhal::cuda

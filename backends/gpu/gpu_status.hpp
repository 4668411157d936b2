// Mapping CUDA/HIP runtime errors to xhal statuses, in one place, with the message kept for
// last_error() (per thread). Shared by the cuda and hip plugins.
#pragma once

#include <string>

#include "kernels/gpu/vendor_runtime.hpp"
#include "xhal/status.h"

namespace xhal::gpu {

void set_last_error(std::string message);
const char* last_error();

// XHAL_OK for success; otherwise the matching status, with "<what>: <runtime message>" recorded.
xhal_status check(gpuError_t err, const char* what);

}  // namespace xhal::gpu

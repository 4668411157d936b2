// Mapping CUDA/HIP runtime errors to xhal statuses and messages, in one place. Shared by the cuda
// and hip plugins.
#pragma once

#include <cstddef>

#include "backends/gpu/vendor_device_api.hpp"
#include "xhal/status.h"

namespace xhal::gpu {

// XHAL_OK for success; otherwise the matching status, with "<what>: <name>: <runtime message>"
// written to msg[len].
xhal_status check(gpuError_t err, const char* what, char* msg, size_t len);

}  // namespace xhal::gpu

// What the cuda and hip plugins share at initialisation: the ABI check, the device glue
// (device_api.hpp), the collectives engine (ccl_engine.hpp) and the portable kernels of
// kernels/gpu. Each plugin's xhal_plugin_init calls this, then registers its vendor's own kernels.
#pragma once

#include <cstddef>

#include "xhal/plugin.h"

namespace xhal::gpu {

xhal_status init_gpu_plugin(const xhal_host_api* host, xhal_plugin_api* api, char* reason, size_t reason_len);

}  // namespace xhal::gpu

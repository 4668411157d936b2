// The device glue of the GPU plugins (devices, memory, streams, events over the CUDA or HIP
// runtime), written once with the names of vendor_device_api.hpp.
#pragma once

#include "xhal/plugin.h"

namespace xhal::gpu {

// Fills every member of `api` that the runtime serves: the device/memory/stream/event functions,
// the property queries, backend name, DLPack device type and ABI fields. Leaves version, shutdown and comm
// to gpu_plugin.cpp.
void fill_device_api(xhal_plugin_api* api);

// "<runtime> runtime X.Y, driver X.Y" for the plugin's version string.
const char* runtime_versions();

}  // namespace xhal::gpu

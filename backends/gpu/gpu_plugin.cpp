// The entry points of the cuda and hip plugins, written once: the ABI check, the device glue
// (device_api.hpp), the collectives engine (ccl_engine.hpp) and every kernel file built into the
// plugin (the portable kernels of kernels/gpu and, in the cuda plugin, NVIDIA's own: the Hopper
// attention kernels and linear through cuBLASLt).
#include <cstdio>
#include <string>

#include "ccl_engine.hpp"
#include "device_api.hpp"
#include "kernels/gpu/kernel_registration.hpp"
#include "backends/gpu/vendor_device_api.hpp"

XHAL_PLUGIN_DEFINE_ABI_VERSION()

extern "C" __attribute__((visibility("default"))) xhal_status xhal_plugin_init(const xhal_host_api* host,
                                                                               xhal_plugin_api* api, char* reason,
                                                                               size_t reason_len) {
  using namespace xhal::gpu;
  if (host == nullptr || host->abi_version != XHAL_PLUGIN_ABI_VERSION || api->struct_size < XHAL_PLUGIN_API_MIN_SIZE) {
    std::snprintf(reason, reason_len, "xhal ABI %u, this %s plugin needs %d", host ? host->abi_version : 0u,
                  XHAL_GPU_BACKEND, XHAL_PLUGIN_ABI_VERSION);
    return XHAL_ERR_UNSUPPORTED;
  }
  static const std::string version = std::string("xhal " XHAL_GPU_BACKEND " plugin, ") + runtime_versions();
  fill_device_api(api);
  api->version = version.c_str();
  api->shutdown = nullptr;
  api->comm = ccl_comm_api(host);

  xhal::kernels::register_kernel_files(host);
  return XHAL_OK;
}

#include "gpu_plugin.hpp"

#include <cstdio>
#include <string>

#include "ccl_engine.hpp"
#include "device_api.hpp"
#include "kernels/gpu/kernel_registration.hpp"
#include "kernels/gpu/vendor_runtime.hpp"

namespace xhal::gpu {

xhal_status init_gpu_plugin(const xhal_host_api* host, xhal_plugin_api* api, char* reason, size_t reason_len) {
  if (host == nullptr || host->abi_version != XHAL_PLUGIN_ABI_VERSION ||
      api->struct_size < XHAL_PLUGIN_API_MIN_SIZE) {
    std::snprintf(reason, reason_len, "xhal ABI %u, this %s plugin needs %d", host ? host->abi_version : 0u,
                  XHAL_GPU_BACKEND, XHAL_PLUGIN_ABI_VERSION);
    return XHAL_ERR_UNSUPPORTED;
  }
  static const std::string version = std::string("xhal " XHAL_GPU_BACKEND " plugin, ") + runtime_versions();
  fill_device_api(api);
  api->version = version.c_str();
  api->shutdown = nullptr;
  api->comm = ccl_comm_api(host);

  kernels::register_kernel_files(host);  // the portable kernels and, in the cuda plugin, NVIDIA's own
  return XHAL_OK;
}

}  // namespace xhal::gpu

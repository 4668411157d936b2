// The two symbols every plugin exports: its ABI version, asked first, and its initialisation.
#include <cstdio>

#include "toy_accel.hpp"

XHAL_PLUGIN_DEFINE_ABI_VERSION()

extern "C" __attribute__((visibility("default"))) xhal_status xhal_plugin_init(const xhal_host_api* host,
                                                                               xhal_plugin_api* api, char* msg,
                                                                               size_t msg_len) {
  if (host == nullptr || host->abi_version != XHAL_PLUGIN_ABI_VERSION || api->struct_size < XHAL_PLUGIN_API_MIN_SIZE) {
    std::snprintf(msg, msg_len, "toyaccel is built for plugin ABI %d", XHAL_PLUGIN_ABI_VERSION);
    return XHAL_ERR_UNSUPPORTED;
  }
  static toyaccel::Device device;  // lives as long as the process: the core never unloads plugins
  api->abi_version = XHAL_PLUGIN_ABI_VERSION;
  api->self = &device;
  api->backend = "toyaccel";
  api->version = "toyaccel 1.0 (a pretend accelerator: host memory, its own kernels)";
  api->dlpack_device_type = kDLExtDev;
  toyaccel::fill_device_table(api);
  toyaccel::register_kernels(host);
  return XHAL_OK;
}

// The HIP backend plugin (AMD GPUs, Hygon DCUs): the GPU plugin of backends/gpu over the HIP
// runtime, RCCL for collectives, and the kernels of kernels/gpu compiled by hipcc. There are no
// MFMA kernels yet: attention, paged_attention and linear run the portable kernels
// (docs/backends.md). Without an AMD GPU it loads and reports zero devices with the runtime's
// reason.
#include "backends/gpu/gpu_plugin.hpp"

extern "C" __attribute__((visibility("default"))) uint32_t xhal_plugin_abi_version(void) {
  return XHAL_PLUGIN_ABI_VERSION;
}

extern "C" __attribute__((visibility("default"))) xhal_status xhal_plugin_init(
    const xhal_host_api* host, xhal_plugin_api* api, char* reason, size_t reason_len) {
  return xhal::gpu::init_gpu_plugin(host, api, reason, reason_len);
}

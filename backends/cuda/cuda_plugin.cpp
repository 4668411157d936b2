// The CUDA backend plugin: the GPU plugin of backends/gpu over the CUDA runtime (linked statically,
// so the plugin loads without a driver and then reports zero devices with the reason), NCCL for
// collectives, plus what only NVIDIA has here: the Hopper attention kernels and linear through
// cuBLASLt (each registers itself, like every kernel file).
#include "backends/gpu/gpu_plugin.hpp"

extern "C" __attribute__((visibility("default"))) uint32_t xhal_plugin_abi_version(void) {
  return XHAL_PLUGIN_ABI_VERSION;
}

extern "C" __attribute__((visibility("default"))) xhal_status xhal_plugin_init(
    const xhal_host_api* host, xhal_plugin_api* api, char* reason, size_t reason_len) {
  return xhal::gpu::init_gpu_plugin(host, api, reason, reason_len);
}

// The CUDA backend plugin: the GPU plugin of backends/gpu over the CUDA runtime (linked statically,
// so the plugin loads without a driver and then reports zero devices with the reason), NCCL for
// collectives, plus what only NVIDIA has here: the Hopper attention kernels and linear through
// cuBLASLt.
#include "backends/gpu/gpu_plugin.hpp"
#include "kernels/gpu/kernel_registration.hpp"
#include "linear_cublaslt.hpp"

extern "C" __attribute__((visibility("default"))) uint32_t xhal_plugin_abi_version(void) {
  return XHAL_PLUGIN_ABI_VERSION;
}

extern "C" __attribute__((visibility("default"))) xhal_status xhal_plugin_init(
    const xhal_host_api* host, xhal_plugin_api* api, char* reason, size_t reason_len) {
  const xhal_status status = xhal::gpu::init_gpu_plugin(host, api, reason, reason_len);
  if (status != XHAL_OK) return status;
  xhal::gpu::register_attention_sm90_kernels(host);
  xhal::cuda::register_cublaslt_linear(host);
  return XHAL_OK;
}

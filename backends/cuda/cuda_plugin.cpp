// The CUDA backend plugin: devices, memory, streams and events over the CUDA runtime (linked
// statically, so the plugin loads without a driver and then reports zero devices with the reason),
// the single-source kernels of kernels/gpu, and linear through cuBLASLt.
#include <cstdio>
#include <string>

#include "cuda_status.hpp"
#include "kernels/gpu/kernel_registration.hpp"
#include "linear_cublaslt.hpp"
#include "nccl_engine.hpp"
#include "xhal/plugin.h"

namespace xhal::cuda {
namespace {

// Makes `device` current for this thread (cheap when it already is).
xhal_status use(int32_t device) {
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current == device) return XHAL_OK;
  return check(cudaSetDevice(device), "cudaSetDevice");
}

int32_t device_count(char* reason, size_t len) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    std::snprintf(reason, len, "cudaGetDeviceCount: %s (%s)", cudaGetErrorString(err),
                  cudaGetErrorName(err));
    return 0;
  }
  if (count == 0) std::snprintf(reason, len, "the CUDA driver reports no device");
  return count;
}

xhal_status device_props(int32_t device, xhal_device_props* props) {
  cudaDeviceProp p{};
  if (auto s = check(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties"); s != XHAL_OK) {
    return s;
  }
  std::snprintf(props->name, sizeof props->name, "%.127s", p.name);
  std::snprintf(props->arch, sizeof props->arch, "sm_%d%d", p.major, p.minor);
  props->total_memory = p.totalGlobalMem;
  props->compute_units = p.multiProcessorCount;
  props->warp_size = p.warpSize;
  return XHAL_OK;
}

xhal_status mem_get_info(int32_t device, size_t* free_bytes, size_t* total_bytes) {
  if (auto s = use(device); s != XHAL_OK) return s;
  return check(cudaMemGetInfo(free_bytes, total_bytes), "cudaMemGetInfo");
}

xhal_status device_malloc(int32_t device, size_t bytes, void** ptr) {
  if (auto s = use(device); s != XHAL_OK) return s;
  return check(cudaMalloc(ptr, bytes), "cudaMalloc");
}

xhal_status device_free(int32_t device, void* ptr) {
  if (auto s = use(device); s != XHAL_OK) return s;
  return check(cudaFree(ptr), "cudaFree");
}

xhal_status copy(int32_t device, void* dst, const void* src, size_t bytes, xhal_copy_kind kind,
                 void* stream) {
  if (auto s = use(device); s != XHAL_OK) return s;
  static constexpr cudaMemcpyKind kKinds[] = {cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost,
                                              cudaMemcpyDeviceToDevice};
  return check(cudaMemcpyAsync(dst, src, bytes, kKinds[kind], static_cast<cudaStream_t>(stream)),
               "cudaMemcpyAsync");
}

xhal_status stream_create(int32_t device, void** stream) {
  if (auto s = use(device); s != XHAL_OK) return s;
  return check(cudaStreamCreateWithFlags(reinterpret_cast<cudaStream_t*>(stream), cudaStreamNonBlocking),
               "cudaStreamCreate");
}

xhal_status stream_destroy(int32_t device, void* stream) {
  if (auto s = use(device); s != XHAL_OK) return s;
  return check(cudaStreamDestroy(static_cast<cudaStream_t>(stream)), "cudaStreamDestroy");
}

xhal_status stream_synchronize(int32_t device, void* stream) {
  if (auto s = use(device); s != XHAL_OK) return s;
  return check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "cudaStreamSynchronize");
}

xhal_status device_synchronize(int32_t device) {
  if (auto s = use(device); s != XHAL_OK) return s;
  return check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

xhal_status event_create(int32_t device, void** event) {
  if (auto s = use(device); s != XHAL_OK) return s;
  return check(cudaEventCreateWithFlags(reinterpret_cast<cudaEvent_t*>(event), cudaEventDisableTiming),
               "cudaEventCreate");
}

xhal_status event_destroy(int32_t, void* event) {
  return check(cudaEventDestroy(static_cast<cudaEvent_t>(event)), "cudaEventDestroy");
}

xhal_status event_record(int32_t device, void* event, void* stream) {
  if (auto s = use(device); s != XHAL_OK) return s;
  return check(cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream)),
               "cudaEventRecord");
}

xhal_status event_query(int32_t, void* event) {
  return check(cudaEventQuery(static_cast<cudaEvent_t>(event)), "cudaEventQuery");
}

xhal_status event_synchronize(int32_t, void* event) {
  return check(cudaEventSynchronize(static_cast<cudaEvent_t>(event)), "cudaEventSynchronize");
}

xhal_status stream_wait_event(int32_t device, void* stream, void* event) {
  if (auto s = use(device); s != XHAL_OK) return s;
  return check(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), static_cast<cudaEvent_t>(event), 0),
               "cudaStreamWaitEvent");
}

}  // namespace
}  // namespace xhal::cuda

extern "C" __attribute__((visibility("default"))) xhal_status xhal_plugin_init(
    const xhal_host_api* host, xhal_plugin_api* api, char* reason, size_t reason_len) {
  using namespace xhal::cuda;
  if (host == nullptr || host->abi_version != XHAL_PLUGIN_ABI_VERSION ||
      api->struct_size < sizeof(xhal_plugin_api)) {
    std::snprintf(reason, reason_len, "xhal ABI %u, this cuda plugin needs %d",
                  host ? host->abi_version : 0u, XHAL_PLUGIN_ABI_VERSION);
    return XHAL_ERR_UNSUPPORTED;
  }
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  static const std::string version = "xhal cuda plugin, CUDA runtime " + std::to_string(runtime / 1000) +
                                     "." + std::to_string(runtime % 1000 / 10) + ", driver " +
                                     std::to_string(driver / 1000) + "." +
                                     std::to_string(driver % 1000 / 10);
  api->abi_version = XHAL_PLUGIN_ABI_VERSION;
  api->struct_size = sizeof(xhal_plugin_api);
  api->backend = "cuda";
  api->version = version.c_str();
  api->dlpack_device_type = kDLCUDA;
  api->device_count = device_count;
  api->device_props = device_props;
  api->mem_get_info = mem_get_info;
  api->malloc = device_malloc;
  api->free = device_free;
  api->memcpy = copy;
  api->stream_create = stream_create;
  api->stream_destroy = stream_destroy;
  api->stream_synchronize = stream_synchronize;
  api->device_synchronize = device_synchronize;
  api->event_create = event_create;
  api->event_destroy = event_destroy;
  api->event_record = event_record;
  api->event_query = event_query;
  api->event_synchronize = event_synchronize;
  api->stream_wait_event = stream_wait_event;
  api->last_error = last_error;
  api->shutdown = nullptr;
  api->comm = xhal::cuda::nccl_comm_api();

  using namespace xhal::gpu;
  register_norm_kernels(host);
  register_swiglu_kernels(host);
  register_rope_kernels(host);
  register_attention_kernels(host);
  register_attention_sm90_kernels(host);
  register_paged_attention_kernels(host);
  register_cublaslt_linear(host);
  return XHAL_OK;
}

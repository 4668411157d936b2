#include "device_api.hpp"

#include <cstdio>
#include <cstring>
#include <string>

#include "gpu_status.hpp"

namespace xhal::gpu {
namespace {

// Makes `device` current for this thread (cheap when it already is).
xhal_status use(int32_t device) {
  int current = -1;
  if (gpuGetDevice(&current) == gpuSuccess && current == device) return XHAL_OK;
  return check(gpuSetDevice(device), "set device");
}

int32_t device_count(char* reason, size_t len) {
  int count = 0;
  const gpuError_t err = gpuGetDeviceCount(&count);
  if (err != gpuSuccess) {
    (void)gpuGetLastError();
    const char *name = gpuGetErrorName(err), *text = gpuGetErrorString(err);
    if (err == gpuErrorNoDevice) {
      std::snprintf(reason, len, "the %s runtime finds no device (%s: no GPU, or its device files "
                    "are not accessible to this process)", XHAL_GPU_RUNTIME, name);
    } else if (std::strcmp(name, text) == 0) {
      std::snprintf(reason, len, "%s device count: %s", XHAL_GPU_RUNTIME, name);
    } else {
      std::snprintf(reason, len, "%s device count: %s (%s)", XHAL_GPU_RUNTIME, text, name);
    }
    return 0;
  }
  if (count == 0) std::snprintf(reason, len, "the %s driver reports no device", XHAL_GPU_RUNTIME);
  return count;
}

xhal_status device_props(int32_t device, xhal_device_props* props) {
  gpuDeviceProp_t p{};
  if (auto s = check(gpuGetDeviceProperties(&p, device), "get device properties"); s != XHAL_OK) return s;
  std::snprintf(props->name, sizeof props->name, "%.127s", p.name);
  gpu_arch_name(p, props->arch, sizeof props->arch);
  props->total_memory = p.totalGlobalMem;
  props->compute_units = p.multiProcessorCount;
  props->warp_size = p.warpSize;
  return XHAL_OK;
}

xhal_status mem_get_info(int32_t device, size_t* free_bytes, size_t* total_bytes) {
  if (auto s = use(device); s != XHAL_OK) return s;
  return check(gpuMemGetInfo(free_bytes, total_bytes), "get memory info");
}

xhal_status device_malloc(int32_t device, size_t bytes, void** ptr) {
  if (auto s = use(device); s != XHAL_OK) return s;
  return check(gpuMalloc(ptr, bytes), "malloc");
}

xhal_status device_free(int32_t device, void* ptr) {
  if (auto s = use(device); s != XHAL_OK) return s;
  return check(gpuFree(ptr), "free");
}

xhal_status copy(int32_t device, void* dst, const void* src, size_t bytes, xhal_copy_kind kind, void* stream) {
  if (auto s = use(device); s != XHAL_OK) return s;
  static constexpr gpuMemcpyKind kKinds[] = {gpuMemcpyHostToDevice, gpuMemcpyDeviceToHost, gpuMemcpyDeviceToDevice};
  return check(gpuMemcpyAsync(dst, src, bytes, kKinds[kind], static_cast<gpuStream_t>(stream)), "memcpy");
}

xhal_status stream_create(int32_t device, void** stream) {
  if (auto s = use(device); s != XHAL_OK) return s;
  return check(gpuStreamCreateWithFlags(reinterpret_cast<gpuStream_t*>(stream), gpuStreamNonBlocking),
               "create stream");
}

xhal_status stream_destroy(int32_t device, void* stream) {
  if (auto s = use(device); s != XHAL_OK) return s;
  return check(gpuStreamDestroy(static_cast<gpuStream_t>(stream)), "destroy stream");
}

xhal_status stream_synchronize(int32_t device, void* stream) {
  if (auto s = use(device); s != XHAL_OK) return s;
  return check(gpuStreamSynchronize(static_cast<gpuStream_t>(stream)), "synchronize stream");
}

xhal_status device_synchronize(int32_t device) {
  if (auto s = use(device); s != XHAL_OK) return s;
  return check(gpuDeviceSynchronize(), "synchronize device");
}

xhal_status event_create(int32_t device, void** event) {
  if (auto s = use(device); s != XHAL_OK) return s;
  return check(gpuEventCreateWithFlags(reinterpret_cast<gpuEvent_t*>(event), gpuEventDisableTiming),
               "create event");
}

xhal_status timed_event_create(int32_t device, void** event) {
  if (auto s = use(device); s != XHAL_OK) return s;
  return check(gpuEventCreateWithFlags(reinterpret_cast<gpuEvent_t*>(event), gpuEventDefault),
               "create timed event");
}

xhal_status event_elapsed_ms(int32_t, void* start, void* end, float* ms) {
  return check(gpuEventElapsedTime(ms, static_cast<gpuEvent_t>(start), static_cast<gpuEvent_t>(end)),
               "event elapsed time");
}

xhal_status event_destroy(int32_t, void* event) {
  return check(gpuEventDestroy(static_cast<gpuEvent_t>(event)), "destroy event");
}

xhal_status event_record(int32_t device, void* event, void* stream) {
  if (auto s = use(device); s != XHAL_OK) return s;
  return check(gpuEventRecord(static_cast<gpuEvent_t>(event), static_cast<gpuStream_t>(stream)), "record event");
}

xhal_status event_query(int32_t, void* event) {
  return check(gpuEventQuery(static_cast<gpuEvent_t>(event)), "query event");
}

xhal_status event_synchronize(int32_t, void* event) {
  return check(gpuEventSynchronize(static_cast<gpuEvent_t>(event)), "synchronize event");
}

xhal_status stream_wait_event(int32_t device, void* stream, void* event) {
  if (auto s = use(device); s != XHAL_OK) return s;
  return check(gpuStreamWaitEvent(static_cast<gpuStream_t>(stream), static_cast<gpuEvent_t>(event), 0),
               "stream wait event");
}

}  // namespace

void fill_device_api(xhal_plugin_api* api) {
  api->abi_version = XHAL_PLUGIN_ABI_VERSION;
  api->struct_size = sizeof(xhal_plugin_api);
  api->backend = XHAL_GPU_BACKEND;
  api->dlpack_device_type = kGpuDLDeviceType;
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
  api->timed_event_create = timed_event_create;
  api->event_elapsed_ms = event_elapsed_ms;
}

const char* runtime_versions() {
  static const std::string text = [] {
    int runtime = 0, driver = 0, rt_major = 0, rt_minor = 0, drv_major = 0, drv_minor = 0;
    (void)gpuRuntimeGetVersion(&runtime);
    (void)gpuDriverGetVersion(&driver);
    gpu_version(runtime, &rt_major, &rt_minor);
    gpu_version(driver, &drv_major, &drv_minor);
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s runtime %d.%d, driver %d.%d", XHAL_GPU_RUNTIME, rt_major, rt_minor,
                  drv_major, drv_minor);
    return std::string(buf);
  }();
  return text.c_str();
}

}  // namespace xhal::gpu

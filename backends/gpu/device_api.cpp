#include "device_api.hpp"

#include <cstdio>
#include <cstring>
#include <string>

#include "gpu_status.hpp"

namespace xhal::gpu {
namespace {

// Makes `device` current for this thread (cheap when it already is).
xhal_status use(int32_t device, char* msg, size_t len) {
  int current = -1;
  if (gpuGetDevice(&current) == gpuSuccess && current == device) return XHAL_OK;
  return check(gpuSetDevice(device), "set device", msg, len);
}

int32_t device_count(void*, char* reason, size_t len) {
  int count = 0;
  const gpuError_t err = gpuGetDeviceCount(&count);
  if (err != gpuSuccess) {
    (void)gpuGetLastError();
    const char *name = gpuGetErrorName(err), *text = gpuGetErrorString(err);
    if (err == gpuErrorNoDevice) {
      std::snprintf(reason, len,
                    "the %s runtime finds no device (%s: no GPU, or its device files "
                    "are not accessible to this process)",
                    XHAL_GPU_RUNTIME, name);
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

xhal_status properties(int32_t device, gpuDeviceProp_t* p, char* msg, size_t len) {
  return check(gpuGetDeviceProperties(p, device), "get device properties", msg, len);
}

xhal_status query_int(void*, int32_t device, xhal_query key, int64_t* value, char* msg, size_t len) {
  gpuDeviceProp_t p{};
  if (auto s = properties(device, &p, msg, len); s != XHAL_OK) return s;
  switch (key) {
    case XHAL_QUERY_TOTAL_MEMORY: return *value = int64_t(p.totalGlobalMem), XHAL_OK;
    case XHAL_QUERY_COMPUTE_UNITS: return *value = p.multiProcessorCount, XHAL_OK;
    case XHAL_QUERY_WARP_SIZE: return *value = p.warpSize, XHAL_OK;
    default:
      std::snprintf(msg, len, "not an integer property of the %s plugin", XHAL_GPU_BACKEND);
      return XHAL_ERR_UNSUPPORTED;
  }
}

xhal_status query_text(void*, int32_t device, xhal_query key, char* value, size_t value_len, char* msg, size_t len) {
  gpuDeviceProp_t p{};
  if (auto s = properties(device, &p, msg, len); s != XHAL_OK) return s;
  switch (key) {
    case XHAL_QUERY_NAME: return std::snprintf(value, value_len, "%.255s", p.name), XHAL_OK;
    case XHAL_QUERY_ARCH: return gpu_arch_name(p, value, value_len), XHAL_OK;
    default:
      std::snprintf(msg, len, "not a text property of the %s plugin", XHAL_GPU_BACKEND);
      return XHAL_ERR_UNSUPPORTED;
  }
}

xhal_status mem_info(void*, int32_t device, size_t* free_bytes, size_t* total_bytes, char* msg, size_t len) {
  if (auto s = use(device, msg, len); s != XHAL_OK) return s;
  return check(gpuMemGetInfo(free_bytes, total_bytes), "get memory info", msg, len);
}

xhal_status mem_alloc(void*, int32_t device, size_t bytes, void** ptr, char* msg, size_t len) {
  if (auto s = use(device, msg, len); s != XHAL_OK) return s;
  return check(gpuMalloc(ptr, bytes), "malloc", msg, len);
}

xhal_status mem_release(void*, int32_t device, void* ptr, char* msg, size_t len) {
  if (auto s = use(device, msg, len); s != XHAL_OK) return s;
  return check(gpuFree(ptr), "free", msg, len);
}

xhal_status mem_copy(void*, int32_t device, void* dst, const void* src, size_t bytes, xhal_copy_kind kind, void* stream,
                     char* msg, size_t len) {
  if (auto s = use(device, msg, len); s != XHAL_OK) return s;
  static constexpr gpuMemcpyKind kKinds[] = {gpuMemcpyHostToDevice, gpuMemcpyDeviceToHost, gpuMemcpyDeviceToDevice};
  return check(gpuMemcpyAsync(dst, src, bytes, kKinds[kind], static_cast<gpuStream_t>(stream)), "memcpy", msg, len);
}

xhal_status stream_create(void*, int32_t device, void** stream, char* msg, size_t len) {
  if (auto s = use(device, msg, len); s != XHAL_OK) return s;
  return check(gpuStreamCreateWithFlags(reinterpret_cast<gpuStream_t*>(stream), gpuStreamNonBlocking), "create stream",
               msg, len);
}

xhal_status stream_destroy(void*, int32_t device, void* stream, char* msg, size_t len) {
  if (auto s = use(device, msg, len); s != XHAL_OK) return s;
  return check(gpuStreamDestroy(static_cast<gpuStream_t>(stream)), "destroy stream", msg, len);
}

xhal_status stream_synchronize(void*, int32_t device, void* stream, char* msg, size_t len) {
  if (auto s = use(device, msg, len); s != XHAL_OK) return s;
  return check(gpuStreamSynchronize(static_cast<gpuStream_t>(stream)), "synchronize stream", msg, len);
}

xhal_status device_synchronize(void*, int32_t device, char* msg, size_t len) {
  if (auto s = use(device, msg, len); s != XHAL_OK) return s;
  return check(gpuDeviceSynchronize(), "synchronize device", msg, len);
}

xhal_status event_create(void*, int32_t device, void** event, char* msg, size_t len) {
  if (auto s = use(device, msg, len); s != XHAL_OK) return s;
  return check(gpuEventCreateWithFlags(reinterpret_cast<gpuEvent_t*>(event), gpuEventDisableTiming), "create event",
               msg, len);
}

xhal_status timed_event_create(void*, int32_t device, void** event, char* msg, size_t len) {
  if (auto s = use(device, msg, len); s != XHAL_OK) return s;
  return check(gpuEventCreateWithFlags(reinterpret_cast<gpuEvent_t*>(event), gpuEventDefault), "create timed event",
               msg, len);
}

xhal_status event_elapsed_ms(void*, int32_t, void* start, void* end, float* ms, char* msg, size_t len) {
  return check(gpuEventElapsedTime(ms, static_cast<gpuEvent_t>(start), static_cast<gpuEvent_t>(end)),
               "event elapsed time", msg, len);
}

xhal_status event_destroy(void*, int32_t, void* event, char* msg, size_t len) {
  return check(gpuEventDestroy(static_cast<gpuEvent_t>(event)), "destroy event", msg, len);
}

xhal_status event_record(void*, int32_t device, void* event, void* stream, char* msg, size_t len) {
  if (auto s = use(device, msg, len); s != XHAL_OK) return s;
  return check(gpuEventRecord(static_cast<gpuEvent_t>(event), static_cast<gpuStream_t>(stream)), "record event", msg,
               len);
}

xhal_status event_query(void*, int32_t, void* event, char* msg, size_t len) {
  return check(gpuEventQuery(static_cast<gpuEvent_t>(event)), "query event", msg, len);
}

xhal_status event_synchronize(void*, int32_t, void* event, char* msg, size_t len) {
  return check(gpuEventSynchronize(static_cast<gpuEvent_t>(event)), "synchronize event", msg, len);
}

xhal_status stream_wait_event(void*, int32_t device, void* stream, void* event, char* msg, size_t len) {
  if (auto s = use(device, msg, len); s != XHAL_OK) return s;
  return check(gpuStreamWaitEvent(static_cast<gpuStream_t>(stream), static_cast<gpuEvent_t>(event), 0),
               "stream wait event", msg, len);
}

}  // namespace

void fill_device_api(xhal_plugin_api* api) {
  api->abi_version = XHAL_PLUGIN_ABI_VERSION;
  api->self = nullptr;  // the runtime's own per-process state is the instance
  api->backend = XHAL_GPU_BACKEND;
  api->dlpack_device_type = kGpuDLDeviceType;
  api->device_count = device_count;
  api->query_int = query_int;
  api->query_text = query_text;
  api->mem_info = mem_info;
  api->mem_alloc = mem_alloc;
  api->mem_release = mem_release;
  api->mem_copy = mem_copy;
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
    std::snprintf(buf, sizeof buf, "%s runtime %d.%d, driver %d.%d", XHAL_GPU_RUNTIME, rt_major, rt_minor, drv_major,
                  drv_minor);
    return std::string(buf);
  }();
  return text.c_str();
}

}  // namespace xhal::gpu

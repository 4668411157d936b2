// The CPU backend plugin: host memory, synchronous streams and events, and the CPU kernels. Ops run
// on the calling thread (parallelised with OpenMP), so every stream and event is always complete.
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <string>

#include "cpu_detection.hpp"
#include "kernels/cpu/amx.hpp"
#include "kernels/cpu/cpu_features.hpp"
#include "kernels/cpu/blas.hpp"
#include "kernels/cpu/kernel_registration.hpp"
#include "kernels/cpu/onednn.hpp"
#include "kernels/cpu/stream_copy.hpp"
#include "xhal/plugin.h"

namespace {

xhal_status fail(char* msg, size_t len, xhal_status status, const char* message) {
  std::snprintf(msg, len, "%s", message);
  return status;
}

int32_t device_count(void*, char*, size_t) { return 1; }

xhal_status check_device(int32_t device, char* msg, size_t len) {
  return device == 0 ? XHAL_OK
                     : fail(msg, len, XHAL_ERR_INVALID_ARGUMENT, "the cpu backend has one device, cpu (index 0)");
}

xhal_status mem_info(void*, int32_t device, size_t* free_bytes, size_t* total_bytes, char* msg, size_t len) {
  if (auto s = check_device(device, msg, len); s != XHAL_OK) return s;
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  *total_bytes = size_t(sysconf(_SC_PHYS_PAGES)) * page;
  *free_bytes = size_t(sysconf(_SC_AVPHYS_PAGES)) * page;
  std::ifstream meminfo("/proc/meminfo");  // MemAvailable counts reclaimable cache too
  for (std::string key; meminfo >> key;) {
    size_t kib = 0;
    meminfo >> kib;
    if (key == "MemAvailable:") *free_bytes = kib * 1024;
    meminfo.ignore(64, '\n');
  }
  return XHAL_OK;
}

xhal_status query_int(void*, int32_t device, xhal_query key, int64_t* value, char* msg, size_t len) {
  if (auto s = check_device(device, msg, len); s != XHAL_OK) return s;
  int lanes = 1;
  size_t free_bytes = 0, total_bytes = 0;
  switch (key) {
    case XHAL_QUERY_TOTAL_MEMORY:
      mem_info(nullptr, 0, &free_bytes, &total_bytes, msg, len);
      return *value = int64_t(total_bytes), XHAL_OK;
    case XHAL_QUERY_COMPUTE_UNITS: return *value = omp_get_max_threads(), XHAL_OK;
    case XHAL_QUERY_WARP_SIZE: return xhal::cpu::simd_arch(&lanes), *value = lanes, XHAL_OK;
    default: return fail(msg, len, XHAL_ERR_UNSUPPORTED, "not an integer property of the cpu plugin");
  }
}

xhal_status query_text(void*, int32_t device, xhal_query key, char* value, size_t value_len, char* msg, size_t len) {
  if (auto s = check_device(device, msg, len); s != XHAL_OK) return s;
  int lanes = 1;
  switch (key) {
    case XHAL_QUERY_NAME: return std::snprintf(value, value_len, "%s", xhal::cpu::cpu_model_name().c_str()), XHAL_OK;
    case XHAL_QUERY_ARCH: return std::snprintf(value, value_len, "%s", xhal::cpu::simd_arch(&lanes)), XHAL_OK;
    default: return fail(msg, len, XHAL_ERR_UNSUPPORTED, "not a text property of the cpu plugin");
  }
}

xhal_status host_alloc(void*, int32_t device, size_t bytes, void** ptr, char* msg, size_t len) {
  if (auto s = check_device(device, msg, len); s != XHAL_OK) return s;
  constexpr size_t kAlign = 64;
  if (bytes > (size_t(1) << 62)) return fail(msg, len, XHAL_ERR_OUT_OF_MEMORY, "request exceeds the address space");
  *ptr = std::aligned_alloc(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
  if (*ptr == nullptr) return fail(msg, len, XHAL_ERR_OUT_OF_MEMORY, "aligned_alloc returned NULL");
  return XHAL_OK;
}

xhal_status host_release(void*, int32_t, void* ptr, char*, size_t) {
  std::free(ptr);
  return XHAL_OK;
}

// Large copies are split across the OpenMP threads: one core does not saturate memory bandwidth.
// Beyond the caches they stream (kernels/cpu/stream_copy.hpp) where the plugin has SIMD kernels.
xhal_status host_copy(void*, int32_t, void* dst, const void* src, size_t bytes, xhal_copy_kind, void*, char*, size_t) {
  constexpr size_t kParallelBytes = size_t(8) << 20;
  if (bytes < kParallelBytes) {
    if (bytes != 0) std::memcpy(dst, src, bytes);
    return XHAL_OK;
  }
#if defined(XHAL_HAVE_HIGHWAY)
  if (bytes >= xhal::cpu::kStreamBytes) {
    xhal::cpu::stream_copy(dst, src, bytes);
    return XHAL_OK;
  }
#endif
  constexpr size_t kChunk = size_t(1) << 20;
  const int64_t chunks = int64_t((bytes + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < chunks; ++i) {
    const size_t offset = size_t(i) * kChunk;
    std::memcpy(static_cast<char*>(dst) + offset, static_cast<const char*>(src) + offset,
                std::min(kChunk, bytes - offset));
  }
  return XHAL_OK;
}

// Work on the CPU completes before the call returns: streams and untimed events are NULL and complete.
xhal_status create_null(void*, int32_t, void** handle, char*, size_t) {
  *handle = nullptr;
  return XHAL_OK;
}
xhal_status complete(void*, int32_t, void*, char*, size_t) { return XHAL_OK; }
xhal_status complete_pair(void*, int32_t, void*, void*, char*, size_t) { return XHAL_OK; }

// Timed events hold the host clock at their record: the CPU's device time is the host's, its ops
// having finished when their calls return. Untimed events stay NULL.
struct TimedEvent {
  std::chrono::steady_clock::time_point at{};
  bool recorded = false;
};
xhal_status create_timed_event(void*, int32_t device, void** handle, char* msg, size_t len) {
  if (const xhal_status s = check_device(device, msg, len); s != XHAL_OK) return s;
  *handle = new (std::nothrow) TimedEvent();
  return *handle != nullptr ? XHAL_OK : fail(msg, len, XHAL_ERR_OUT_OF_MEMORY, "timed event: out of host memory");
}
xhal_status destroy_event(void*, int32_t, void* event, char*, size_t) {
  delete static_cast<TimedEvent*>(event);
  return XHAL_OK;
}
xhal_status record_event(void*, int32_t, void* event, void*, char*, size_t) {
  if (auto* e = static_cast<TimedEvent*>(event)) *e = {std::chrono::steady_clock::now(), true};
  return XHAL_OK;
}
xhal_status event_elapsed_ms(void*, int32_t, void* start, void* end, float* ms, char* msg, size_t len) {
  const auto* a = static_cast<const TimedEvent*>(start);
  const auto* b = static_cast<const TimedEvent*>(end);
  if (a == nullptr || b == nullptr || !a->recorded || !b->recorded) {
    return fail(msg, len, XHAL_ERR_INVALID_ARGUMENT, "event elapsed time: both events must be recorded");
  }
  *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
  return XHAL_OK;
}
xhal_status device_synchronize(void*, int32_t device, char* msg, size_t len) { return check_device(device, msg, len); }

}  // namespace

XHAL_PLUGIN_DEFINE_ABI_VERSION()

extern "C" __attribute__((visibility("default"))) xhal_status xhal_plugin_init(const xhal_host_api* host,
                                                                               xhal_plugin_api* api, char* reason,
                                                                               size_t reason_len) {
  if (host == nullptr || host->abi_version != XHAL_PLUGIN_ABI_VERSION || api->struct_size < XHAL_PLUGIN_API_MIN_SIZE) {
    std::snprintf(reason, reason_len, "xhal ABI %u, this cpu plugin needs %d", host ? host->abi_version : 0u,
                  XHAL_PLUGIN_ABI_VERSION);
    return XHAL_ERR_UNSUPPORTED;
  }
  // The plugin's one variable of its own (docs/configuration.md); before any kernel is chosen.
  static const std::string unknown_disable = xhal::cpu::configure_cpu_features(std::getenv("XHAL_CPU_DISABLE"));
  if (!unknown_disable.empty()) {
    std::snprintf(reason, reason_len, "XHAL_CPU_DISABLE names %s; known: %s", unknown_disable.c_str(),
                  xhal::cpu::kCpuDisableNames);
    return XHAL_ERR_INVALID_ARGUMENT;
  }
  static const std::string version = std::string("xhal cpu plugin, OpenMP ") + std::to_string(_OPENMP) +
                                     "; SIMD: " + xhal::cpu::simd_summary() + "; BLAS: " + xhal::cpu::blas_summary() +
                                     "; " + xhal::cpu::onednn_summary() + "; " + xhal::cpu::amx_summary();
  api->abi_version = XHAL_PLUGIN_ABI_VERSION;
  api->self = nullptr;  // one process-wide host: no state of its own
  api->backend = "cpu";
  api->version = version.c_str();
  api->dlpack_device_type = kDLCPU;
  api->device_count = device_count;
  api->query_int = query_int;
  api->query_text = query_text;
  api->mem_info = mem_info;
  api->mem_alloc = host_alloc;
  api->mem_release = host_release;
  api->mem_copy = host_copy;
  api->stream_create = create_null;
  api->stream_destroy = complete;
  api->stream_synchronize = complete;
  api->device_synchronize = device_synchronize;
  api->event_create = create_null;
  api->event_destroy = destroy_event;
  api->event_record = record_event;
  api->timed_event_create = create_timed_event;
  api->event_elapsed_ms = event_elapsed_ms;
  api->event_query = complete;
  api->event_synchronize = complete;
  api->stream_wait_event = complete_pair;
  api->shutdown = nullptr;
  api->comm = nullptr;  // cpu collectives go through MPI in the core (src/comm)

  xhal::kernels::register_kernel_files(host);  // every kernel file built into the plugin
  if (const std::string warning = xhal::cpu::blas_kernels_warning(); !warning.empty() && host->log != nullptr) {
    host->log(host->ctx, XHAL_LOG_WARN, ("cpu plugin: " + warning).c_str());
  }
  return XHAL_OK;
}

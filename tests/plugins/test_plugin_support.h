/* What the deliberately broken test plugins share: a complete device table backed by host memory
 * (one synchronous device: streams and events are NULL, which plugin.h allows; malloc'd memory,
 * memmove copies), which each plugin fills in and then breaks what it is there to break; and a
 * kernel a plugin registers before failing, which must never reach the registry. */
#ifndef XHAL_TEST_PLUGIN_SUPPORT_H
#define XHAL_TEST_PLUGIN_SUPPORT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xhal/plugin.h"

/* Every plugin of the zoo speaks this ABI unless it is there to speak another. */
XHAL_PLUGIN_DEFINE_ABI_VERSION()

static inline int32_t hm_device_count(void* self, char* reason, size_t len) {
  (void)self, (void)reason, (void)len;
  return 1;
}
static inline xhal_status hm_query_int(void* self, int32_t device, xhal_query key, int64_t* value, char* msg,
                                       size_t len) {
  (void)self, (void)device;
  switch (key) {
    case XHAL_QUERY_TOTAL_MEMORY: *value = (int64_t)1 << 30; return XHAL_OK;
    case XHAL_QUERY_COMPUTE_UNITS:
    case XHAL_QUERY_WARP_SIZE: *value = 1; return XHAL_OK;
    default: snprintf(msg, len, "unknown key %d", (int)key); return XHAL_ERR_UNSUPPORTED;
  }
}
static inline xhal_status hm_query_text(void* self, int32_t device, xhal_query key, char* value, size_t value_len,
                                        char* msg, size_t len) {
  (void)self, (void)device;
  switch (key) {
    case XHAL_QUERY_NAME: snprintf(value, value_len, "host memory test device"); return XHAL_OK;
    case XHAL_QUERY_ARCH: snprintf(value, value_len, "test"); return XHAL_OK;
    default: snprintf(msg, len, "unknown key %d", (int)key); return XHAL_ERR_UNSUPPORTED;
  }
}
static inline xhal_status hm_mem_info(void* self, int32_t device, size_t* free_bytes, size_t* total_bytes, char* msg,
                                      size_t len) {
  (void)self, (void)device, (void)msg, (void)len;
  *free_bytes = *total_bytes = (size_t)1 << 30;
  return XHAL_OK;
}
static inline xhal_status hm_alloc(void* self, int32_t device, size_t bytes, void** ptr, char* msg, size_t len) {
  (void)self, (void)device;
  *ptr = malloc(bytes ? bytes : 1);
  if (*ptr == NULL) snprintf(msg, len, "malloc(%zu) returned NULL", bytes);
  return *ptr ? XHAL_OK : XHAL_ERR_OUT_OF_MEMORY;
}
static inline xhal_status hm_release(void* self, int32_t device, void* ptr, char* msg, size_t len) {
  (void)self, (void)device, (void)msg, (void)len;
  free(ptr);
  return XHAL_OK;
}
static inline xhal_status hm_copy(void* self, int32_t device, void* dst, const void* src, size_t bytes,
                                  xhal_copy_kind kind, void* stream, char* msg, size_t len) {
  (void)self, (void)device, (void)kind, (void)stream, (void)msg, (void)len;
  memmove(dst, src, bytes);
  return XHAL_OK;
}
static inline xhal_status hm_make_null(void* self, int32_t device, void** handle, char* msg, size_t len) {
  (void)self, (void)device, (void)msg, (void)len;
  *handle = NULL;
  return XHAL_OK;
}
static inline xhal_status hm_on_handle(void* self, int32_t device, void* handle, char* msg, size_t len) {
  (void)self, (void)device, (void)handle, (void)msg, (void)len;
  return XHAL_OK;
}
static inline xhal_status hm_on_device(void* self, int32_t device, char* msg, size_t len) {
  (void)self, (void)device, (void)msg, (void)len;
  return XHAL_OK;
}
static inline xhal_status hm_on_two(void* self, int32_t device, void* a, void* b, char* msg, size_t len) {
  (void)self, (void)device, (void)a, (void)b, (void)msg, (void)len;
  return XHAL_OK;
}

static inline void fill_host_memory_device(xhal_plugin_api* api, const char* backend, const char* version) {
  const uint32_t size = api->struct_size;
  memset(api, 0, size < sizeof *api ? size : sizeof *api);
  api->struct_size = size;
  api->abi_version = XHAL_PLUGIN_ABI_VERSION;
  api->backend = backend;
  api->version = version;
  api->dlpack_device_type = kDLCPU;
  api->device_count = hm_device_count;
  api->query_int = hm_query_int;
  api->query_text = hm_query_text;
  api->mem_info = hm_mem_info;
  api->mem_alloc = hm_alloc;
  api->mem_release = hm_release;
  api->mem_copy = hm_copy;
  api->stream_create = hm_make_null;
  api->stream_destroy = hm_on_handle;
  api->stream_synchronize = hm_on_handle;
  api->device_synchronize = hm_on_device;
  api->event_create = hm_make_null;
  api->event_destroy = hm_on_handle;
  api->event_record = hm_on_two;
  api->event_query = hm_on_handle;
  api->event_synchronize = hm_on_handle;
  api->stream_wait_event = hm_on_two;
}

static inline xhal_status never_run(void* ctx, const xhal_op_call* call, char* msg, size_t len) {
  (void)ctx, (void)call;
  snprintf(msg, len, "this kernel must never run");
  return XHAL_ERR_INTERNAL;
}

/* Registers an f32 kernel; a reference kernel gets a tight accuracy class. */
static inline void register_f32_kernel(const xhal_host_api* host, const char* name, xhal_op op, xhal_kernel_run_fn run,
                                       int32_t priority, int32_t is_reference) {
  xhal_kernel_desc desc;
  memset(&desc, 0, sizeof desc);
  desc.struct_size = sizeof desc;
  desc.name = name;
  desc.op = op;
  desc.dtype = XHAL_DTYPE_F32;
  desc.priority = priority;
  desc.is_reference = is_reference;
  desc.rtol = desc.atol = 1e-5;
  desc.run = run;
  char message[256];
  if (host->register_kernel(host->ctx, &desc, message, sizeof message) != XHAL_OK) {
    host->log(host->ctx, XHAL_LOG_ERROR, message);
  }
}

/* Registers an f32 rms_norm kernel named `name` that would win every dispatch if it were kept. */
static inline void register_doomed_kernel(const xhal_host_api* host, const char* name) {
  register_f32_kernel(host, name, XHAL_OP_RMS_NORM, never_run, 1000, 0);
}

#endif

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

static int32_t hm_device_count(char* reason, size_t len) {
  (void)reason;
  (void)len;
  return 1;
}
static xhal_status hm_device_props(int32_t device, xhal_device_props* props) {
  (void)device;
  memset(props, 0, sizeof *props);
  strcpy(props->name, "host memory test device");
  strcpy(props->arch, "test");
  props->total_memory = (uint64_t)1 << 30;
  props->compute_units = 1;
  props->warp_size = 1;
  return XHAL_OK;
}
static xhal_status hm_mem_get_info(int32_t device, size_t* free_bytes, size_t* total_bytes) {
  (void)device;
  *free_bytes = *total_bytes = (size_t)1 << 30;
  return XHAL_OK;
}
static xhal_status hm_malloc(int32_t device, size_t bytes, void** ptr) {
  (void)device;
  *ptr = malloc(bytes ? bytes : 1);
  return *ptr ? XHAL_OK : XHAL_ERR_OUT_OF_MEMORY;
}
static xhal_status hm_free(int32_t device, void* ptr) {
  (void)device;
  free(ptr);
  return XHAL_OK;
}
static xhal_status hm_memcpy(int32_t device, void* dst, const void* src, size_t bytes,
                             xhal_copy_kind kind, void* stream) {
  (void)device;
  (void)kind;
  (void)stream;
  memmove(dst, src, bytes);
  return XHAL_OK;
}
static xhal_status hm_make_null(int32_t device, void** handle) {
  (void)device;
  *handle = NULL;
  return XHAL_OK;
}
static xhal_status hm_on_handle(int32_t device, void* handle) {
  (void)device;
  (void)handle;
  return XHAL_OK;
}
static xhal_status hm_on_device(int32_t device) {
  (void)device;
  return XHAL_OK;
}
static xhal_status hm_on_two(int32_t device, void* a, void* b) {
  (void)device;
  (void)a;
  (void)b;
  return XHAL_OK;
}
static const char* hm_last_error(void) { return "host memory test device: no error recorded"; }

static void fill_host_memory_device(xhal_plugin_api* api, const char* backend, const char* version) {
  memset(api, 0, api->struct_size < sizeof *api ? api->struct_size : sizeof *api);
  api->abi_version = XHAL_PLUGIN_ABI_VERSION;
  api->struct_size = sizeof *api;
  api->backend = backend;
  api->version = version;
  api->dlpack_device_type = kDLCPU;
  api->device_count = hm_device_count;
  api->device_props = hm_device_props;
  api->mem_get_info = hm_mem_get_info;
  api->malloc = hm_malloc;
  api->free = hm_free;
  api->memcpy = hm_memcpy;
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
  api->last_error = hm_last_error;
}

static xhal_status never_run(const xhal_op_call* call, char* msg, size_t len) {
  (void)call;
  snprintf(msg, len, "this kernel must never run");
  return XHAL_ERR_INTERNAL;
}

/* Registers an f32 kernel; a reference kernel gets a tight accuracy class. */
static void register_f32_kernel(const xhal_host_api* host, const char* name, xhal_op op,
                                xhal_status (*run)(const xhal_op_call*, char*, size_t),
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
  host->register_kernel(host->ctx, &desc);
}

/* Registers an f32 rms_norm kernel named `name` that would win every dispatch if it were kept. */
static void register_doomed_kernel(const xhal_host_api* host, const char* name) {
  register_f32_kernel(host, name, XHAL_OP_RMS_NORM, never_run, 1000, 0);
}

#endif

/* A second plugin claiming the cpu backend: the first one loaded keeps it. */
#include <string.h>

#include "xhal/plugin.h"

static int32_t one(char* reason, size_t len) {
  (void)reason;
  (void)len;
  return 1;
}
static xhal_status refuse(int32_t device, size_t bytes, void** ptr) {
  (void)device;
  (void)bytes;
  (void)ptr;
  return XHAL_ERR_INTERNAL;
}
static xhal_status nothing(int32_t device, void* ptr) {
  (void)device;
  (void)ptr;
  return XHAL_OK;
}
static xhal_status no_copy(int32_t d, void* dst, const void* src, size_t n, xhal_copy_kind k, void* s) {
  (void)d; (void)dst; (void)src; (void)n; (void)k; (void)s;
  return XHAL_ERR_INTERNAL;
}
static const char* no_error(void) { return ""; }

xhal_status xhal_plugin_init(const xhal_host_api* host, xhal_plugin_api* api, char* reason,
                             size_t reason_len) {
  (void)host;
  (void)reason;
  (void)reason_len;
  size_t size = api->struct_size;
  memset(api, 0, size);
  api->abi_version = XHAL_PLUGIN_ABI_VERSION;
  api->struct_size = sizeof(xhal_plugin_api);
  api->backend = "cpu";
  api->device_count = one;
  api->malloc = refuse;
  api->free = nothing;
  api->memcpy = no_copy;
  api->last_error = no_error;
  return XHAL_OK;
}

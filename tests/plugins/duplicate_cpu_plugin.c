/* A second plugin claiming the cpu backend: the first one loaded keeps it. */
#include "test_plugin_support.h"

xhal_status xhal_plugin_init(const xhal_host_api* host, xhal_plugin_api* api, char* reason, size_t reason_len) {
  (void)host;
  (void)reason;
  (void)reason_len;
  fill_host_memory_device(api, "cpu", "duplicate");
  return XHAL_OK;
}

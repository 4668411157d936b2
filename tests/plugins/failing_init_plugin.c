/* A plugin whose initialisation fails (as when its driver is broken): refused with its reason, and
 * the kernel it registered before failing must not reach the registry. */
#include "test_plugin_support.h"

xhal_status xhal_plugin_init(const xhal_host_api* host, xhal_plugin_api* api, char* reason, size_t reason_len) {
  register_doomed_kernel(host, "failing.rms_norm");
  (void)api;
  snprintf(reason, reason_len, "driver version 0 is older than the required 12");
  return XHAL_ERR_BACKEND_UNAVAILABLE;
}

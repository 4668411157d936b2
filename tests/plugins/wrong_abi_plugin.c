/* A plugin of a future ABI version: the core must refuse it with a clear reason, before init. */
#include <stdio.h>

#include "xhal/plugin.h"

uint32_t xhal_plugin_abi_version(void) { return XHAL_PLUGIN_ABI_VERSION + 41; }

xhal_status xhal_plugin_init(const xhal_host_api* host, xhal_plugin_api* api, char* reason, size_t reason_len) {
  (void)host;
  (void)api;
  snprintf(reason, reason_len, "init of a plugin of another ABI must never be called");
  return XHAL_ERR_INTERNAL;
}

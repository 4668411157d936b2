/* A plugin built for another ABI version: the core must refuse it with a clear reason. */
#include "xhal/plugin.h"

xhal_status xhal_plugin_init(const xhal_host_api* host, xhal_plugin_api* api, char* reason,
                             size_t reason_len) {
  (void)host;
  (void)reason;
  (void)reason_len;
  api->abi_version = XHAL_PLUGIN_ABI_VERSION + 41;
  api->backend = "cuda";
  return XHAL_OK;
}

/* A plugin linked against a vendor library symbol that is absent at run time: dlopen must fail
 * with the missing symbol named, and the core must carry on. */
#include "xhal/plugin.h"

extern int xhal_test_vendor_symbol_that_does_not_exist(void);

xhal_status xhal_plugin_init(const xhal_host_api* host, xhal_plugin_api* api, char* reason, size_t reason_len) {
  (void)host;
  (void)api;
  (void)reason;
  (void)reason_len;
  return xhal_test_vendor_symbol_that_does_not_exist() ? XHAL_OK : XHAL_ERR_INTERNAL;
}

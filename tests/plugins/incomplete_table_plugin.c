/* A plugin whose init succeeds but leaves a required member of its table unset (as a plugin built
 * against an older header might): refused naming the member, the kernel it registered dropped. */
#include "test_plugin_support.h"

xhal_status xhal_plugin_init(const xhal_host_api* host, xhal_plugin_api* api, char* reason, size_t reason_len) {
  (void)reason;
  (void)reason_len;
  register_doomed_kernel(host, "incomplete.rms_norm");
  fill_host_memory_device(api, "ze", "incomplete");
  api->event_query = NULL;
  return XHAL_OK;
}

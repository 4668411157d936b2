/* A plugin whose initialisation fails (as when its driver is broken): refused with its reason, and
 * the kernel it registered before failing must not reach the registry. */
#include <stdio.h>

#include "xhal/plugin.h"

static xhal_status never_run(const xhal_op_call* call, char* msg, size_t len) {
  (void)call;
  snprintf(msg, len, "this kernel must never run");
  return XHAL_ERR_INTERNAL;
}

xhal_status xhal_plugin_init(const xhal_host_api* host, xhal_plugin_api* api, char* reason,
                             size_t reason_len) {
  xhal_kernel_desc desc = {0};
  desc.struct_size = sizeof desc;
  desc.name = "failing.rms_norm";
  desc.op = XHAL_OP_RMS_NORM;
  desc.dtype = XHAL_DTYPE_F32;
  desc.priority = 1000;
  desc.run = never_run;
  host->register_kernel(host->ctx, &desc);
  (void)api;
  snprintf(reason, reason_len, "driver version 0 is older than the required 12");
  return XHAL_ERR_BACKEND_UNAVAILABLE;
}

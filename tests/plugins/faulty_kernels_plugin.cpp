// A plugin whose kernels fail, each in a way a real backend's can: a device fault, a workspace
// that cannot be had (after taking and returning scratch memory), a failure without a message, and
// a C++ exception escaping a kernel. It claims the ze backend (this tree has no ze plugin) with one
// host-memory device, and is loaded explicitly by tests/plugin_fault_test.cpp.
#include <cstdio>
#include <stdexcept>

#include "test_plugin_support.h"

namespace {

const xhal_host_api* g_host = nullptr;

xhal_status device_fault(void*, const xhal_op_call*, char* msg, size_t len) {
  std::snprintf(msg, len, "simulated device fault: illegal memory access at 0xdead0000");
  return XHAL_ERR_DEVICE;
}

xhal_status workspace_unavailable(void*, const xhal_op_call* call, char* msg, size_t len) {
  void* scratch = nullptr;
  xhal_status got = g_host->scratch_alloc(g_host->ctx, call->device, 4096, call->stream, &scratch, msg, len);
  if (got != XHAL_OK) return got;
  g_host->scratch_free(g_host->ctx, call->device, scratch);
  std::snprintf(msg, len, "simulated: a 64 GiB workspace is not available");
  return XHAL_ERR_OUT_OF_MEMORY;
}

xhal_status silent_failure(void*, const xhal_op_call*, char*, size_t) { return XHAL_ERR_INTERNAL; }

xhal_status throws(void*, const xhal_op_call*, char*, size_t) {
  throw std::logic_error("simulated bug in a vendor kernel");
}

void add(const xhal_host_api* host, const char* name, xhal_op op, xhal_kernel_run_fn run) {
  register_f32_kernel(host, name, op, run, 0, 1);
}

}  // namespace

extern "C" xhal_status xhal_plugin_init(const xhal_host_api* host, xhal_plugin_api* api, char*, size_t) {
  g_host = host;
  add(host, "faulty.rms_norm", XHAL_OP_RMS_NORM, device_fault);
  add(host, "faulty.swiglu", XHAL_OP_SWIGLU, workspace_unavailable);
  add(host, "faulty.swiglu_packed", XHAL_OP_SWIGLU_PACKED, silent_failure);
  add(host, "faulty.linear", XHAL_OP_LINEAR, throws);
  fill_host_memory_device(api, "ze", "fault injection");
  return XHAL_OK;
}

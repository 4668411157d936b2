// A C++ plugin whose initialisation is interrupted by an exception after it registered a kernel
// (as when a vendor library throws mid-way): refused with the exception's text, nothing kept.
#include <stdexcept>

#include "test_plugin_support.h"

extern "C" xhal_status xhal_plugin_init(const xhal_host_api* host, xhal_plugin_api*, char*, size_t) {
  register_doomed_kernel(host, "interrupted.rms_norm");
  throw std::runtime_error("vendor runtime lost its device daemon during start-up");
}

// BACKEND_TYPE: which device the process uses by default.
#pragma once

#include <string>

#include "xhal/device.hpp"

namespace xhal {

struct DefaultDeviceChoice {
  Device device;
  std::string reason;  // what was picked and why
};

// Resolves BACKEND_TYPE (or `auto` when unset) against the loaded backends. Throws
// Error(invalid_argument) for unknown names, Error(backend_unavailable) for names this build has no
// plugin for and for explicit choices whose plugin or device is missing. Never falls back to cpu
// for an explicit choice.
DefaultDeviceChoice choose_default_device();

}  // namespace xhal

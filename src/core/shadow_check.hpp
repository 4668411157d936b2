// The shadow check behind include/xhal/check.hpp: an op call that runs between a snapshot of its
// tensors on the host and a comparison of its outputs with the CPU reference kernel's.
#pragma once

#include "xhal/check.hpp"
#include "xhal/device.hpp"
#include "xhal/plugin.h"

namespace xhal {

// Whether calls are checked: one relaxed atomic load (the mode is read from XHAL_CHECK on first
// use; an unknown value throws Error(invalid_argument) naming the accepted ones).
bool shadow_check_on();

// Runs `call` on `device` through the registry, checked against the CPU reference.
void run_checked(const xhal_op_call& call, Device device);

}  // namespace xhal

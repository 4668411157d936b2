// The shadow check behind include/xhal/check.hpp: an op call that runs between a snapshot of its
// tensors on the host and a comparison of its outputs with the CPU reference kernel's.
#pragma once

#include <functional>

#include "core/registry.hpp"
#include "xhal/check.hpp"
#include "xhal/device.hpp"
#include "xhal/plugin.h"

namespace xhal {

// XHAL_CHECK's mode; an unknown value throws Error(invalid_argument) naming the accepted ones.
CheckMode check_mode_from_env();
// Sets the mode and the instrumentation flag without reading the environment.
void store_check_mode(CheckMode mode);

// Snapshots `call`'s tensors to the host, runs `dispatch` (the op on `device`), then the CPU
// reference on the snapshot, and compares.
void run_checked(const xhal_op_call& call, Device device, const std::function<void(Registry::Ran*)>& dispatch);

}  // namespace xhal

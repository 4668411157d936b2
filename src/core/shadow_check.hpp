// The shadow check behind include/xhal/check.hpp: an op call that runs between a snapshot of its
// tensors on the host and a comparison of its outputs with the CPU reference kernel's.
#pragma once

#include <functional>

#include "core/registry.hpp"
#include "xhal/check.hpp"
#include "xhal/device.hpp"
#include "xhal/plugin.h"

namespace xhal {

// Applies XHAL_CHECK and XHAL_CHECK_ACTION, once: the first op call and the public setters call it
// first, so a later first op call cannot undo a setter's choice. An unknown value throws
// Error(invalid_argument) naming the accepted ones (and is read again next time).
void read_check_env();

// Snapshots `call`'s tensors to the host, runs `dispatch` (the op on `device`), then the CPU
// reference on the snapshot, and compares.
void run_checked(const xhal_op_call& call, Device device, const std::function<void(Registry::Ran*)>& dispatch);

}  // namespace xhal

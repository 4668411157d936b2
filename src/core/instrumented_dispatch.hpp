// An op call with instrumentation on: the shadow check around the dispatch, the trace's timing
// around the kernel alone. The first op call of the process comes here too, to read XHAL_CHECK and
// XHAL_TRACE.
#pragma once

#include "xhal/device.hpp"
#include "xhal/plugin.h"

namespace xhal {

void run_instrumented(const xhal_op_call& call, Device device);

}  // namespace xhal

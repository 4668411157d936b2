// The op trace behind include/xhal/trace.hpp: one Chrome/Perfetto "complete" event per op call,
// appended to the file as the call returns.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/registry.hpp"
#include "xhal/device.hpp"
#include "xhal/plugin.h"

namespace xhal::trace {

// XHAL_TRACE, if set.
std::optional<std::string> path_from_env();

// Opens a trace at `path` without reading the environment (start_trace() reads it first).
void open_trace(const std::string& path);

// Host nanoseconds on the trace's clock.
int64_t now_ns();

// Appends the event of one call that ran `ran` from start_ns to end_ns (nothing if no trace is
// open).
void record_op(const xhal_op_call& call, Device device, const Registry::Ran& ran, int64_t start_ns,
               int64_t end_ns);

}  // namespace xhal::trace

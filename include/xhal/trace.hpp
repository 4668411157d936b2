// Op tracing: every op call becomes an event of a Chrome/Perfetto trace (JSON array format, one
// event per line, loadable in ui.perfetto.dev or chrome://tracing): op, kernel, backend, device,
// stream, dtype, argument shapes, bytes moved, host time and, on backends with timed events
// (GPUs), device time between events recorded on the op's stream around the kernel.
// XHAL_TRACE=<file> starts a trace at the first op; `xhal-info --trace-summary <file>` prints the
// top ops by time. Each event is written when its call returns (with device time: once the device
// has finished it, at a later call or at stop_trace), so a trace is readable after a crash (its
// closing bracket is optional). Off: one branch per op call.
#pragma once

#include <string>

namespace xhal {

// Starts writing a trace to `path` (replacing any trace in progress, which is finished first).
// Throws Error(invalid_argument) when the file cannot be created.
void start_trace(const std::string& path);
// Finishes the trace in progress (closing bracket written, file closed); nothing when none.
void stop_trace();
bool tracing();

}  // namespace xhal

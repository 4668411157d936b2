// Op tracing: every op call becomes an event of a Chrome/Perfetto trace (JSON array format, one
// event per line, loadable in ui.perfetto.dev or chrome://tracing): op, kernel, backend, device,
// stream, dtype, argument shapes, bytes moved and host time; on devices whose plugin times events
// (GPUs), the kernel's device time as well, on a track per device and stream. XHAL_TRACE=<file>
// starts a trace at the first op; `xhal-info --trace-summary <file>` prints the top ops by time.
// Each event is written when its call returns, so a trace is readable after a crash (its closing
// bracket is optional). Off: one branch per op call.
#pragma once

#include <string>

namespace xhal {

// Starts writing a trace to `path` (replacing any trace in progress, which is finished first).
// Throws Error(invalid_argument) when the file cannot be created.
void start_trace(const std::string& path);
// Finishes the trace in progress (device times resolved, file closed); nothing when none.
void stop_trace();
bool tracing();

}  // namespace xhal

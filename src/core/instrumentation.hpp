// Whether op calls are instrumented (shadow check, trace): one word read by every op call, so that
// instrumentation costs a single branch when off. The environment (XHAL_CHECK, XHAL_TRACE) is read
// on the first op call.
#pragma once

#include <atomic>
#include <cstdint>

#include "xhal/device.hpp"
#include "xhal/plugin.h"

namespace xhal::instrumentation {

enum Flag : uint32_t { kCheck = 1, kTrace = 2, kUnread = 0x80000000u };

extern std::atomic<uint32_t> g_flags;

inline bool any() { return g_flags.load(std::memory_order_relaxed) != 0; }
// Reads XHAL_CHECK, XHAL_CHECK_ACTION and XHAL_TRACE once (opening the trace); the public setters call it first, so
// that a later first op call cannot undo their settings with the environment's.
void ensure_env_read();
void set(Flag flag, bool on);

// Runs `call` on `device` with whatever instrumentation is on (reading the environment first if
// nobody has yet).
void run(const xhal_op_call& call, Device device);

}  // namespace xhal::instrumentation

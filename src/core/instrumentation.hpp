// Whether op calls are instrumented (shadow check, trace): one word read by every op call, so that
// instrumentation costs a single branch when off. It starts as kUnread, which sends the first op
// call through instrumented_dispatch to read XHAL_CHECK and XHAL_TRACE.
#pragma once

#include <atomic>
#include <cstdint>

namespace xhal::instrumentation {

enum Flag : uint32_t { kCheck = 1, kTrace = 2, kUnread = 0x80000000u };

extern std::atomic<uint32_t> g_flags;

inline bool any() { return g_flags.load(std::memory_order_relaxed) != 0; }
void set(Flag flag, bool on);

}  // namespace xhal::instrumentation

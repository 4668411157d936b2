#include "core/instrumentation.hpp"

#include <mutex>
#include <utility>

#include <fmt/format.h>

#include "core/registry.hpp"
#include "core/shadow_check.hpp"
#include "core/trace.hpp"
#include "xhal/error.hpp"
#include "xhal/trace.hpp"

namespace xhal::instrumentation {
namespace {

std::once_flag g_env_read;

}  // namespace

// kUnread until the environment has been read, so that the first op call takes the slow path.
std::atomic<uint32_t> g_flags{kUnread};

void ensure_env_read() {
  std::call_once(g_env_read, [] {  // an exception (a bad value) leaves it unread, to throw again
    read_check_env();
    if (const auto trace_path = trace::path_from_env()) {
      try {
        trace::open_trace(*trace_path);
      } catch (const Error& e) {
        throw Error(e.code(), fmt::format("XHAL_TRACE={}: {}", *trace_path, e.what()));
      }
    }
    g_flags.fetch_and(~uint32_t(kUnread));
  });
}

void set(Flag flag, bool on) {
  if (on) {
    g_flags.fetch_or(flag);
  } else {
    g_flags.fetch_and(~uint32_t(flag));
  }
}

void run(const xhal_op_call& call, Device device) {
  ensure_env_read();
  const uint32_t flags = g_flags.load(std::memory_order_relaxed);
  // The trace times the kernel alone, not the shadow check's copies around it.
  auto dispatch = [&](Registry::Ran* ran) {
    if (!(flags & kTrace)) return Registry::get().dispatch(device.type, call, ran);
    trace::DeviceTiming timing(call, device);
    const int64_t start = trace::now_ns();
    Registry::get().dispatch(device.type, call, ran);
    const int64_t end = trace::now_ns();
    timing.stop();
    trace::record_op(call, device, *ran, start, end, std::move(timing));
  };
  if (flags & kCheck) return run_checked(call, device, dispatch);
  Registry::Ran ran;
  dispatch(&ran);
}

}  // namespace xhal::instrumentation

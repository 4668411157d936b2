#include "core/instrumented_dispatch.hpp"

#include <utility>

#include "core/instrumentation.hpp"
#include "core/registry.hpp"
#include "core/runtime.hpp"
#include "core/shadow_check.hpp"
#include "core/trace.hpp"

namespace xhal {

void run_instrumented(const xhal_op_call& call, Device device) {
  read_check_env();
  trace::read_trace_env();
  instrumentation::set(instrumentation::kUnread, false);
  const uint32_t flags = instrumentation::g_flags.load(std::memory_order_relaxed);
  // The trace times the kernel alone, not the shadow check's copies around it.
  auto dispatch = [&](Registry::Ran* ran) {
    if (!(flags & instrumentation::kTrace)) return Runtime::get().registry().dispatch(device.type, call, ran);
    trace::DeviceTiming timing(call, device);
    const int64_t start = trace::now_ns();
    Runtime::get().registry().dispatch(device.type, call, ran);
    const int64_t end = trace::now_ns();
    timing.stop();
    trace::record_op(call, device, *ran, start, end, std::move(timing));
  };
  if (flags & instrumentation::kCheck) return run_checked(call, device, dispatch);
  Registry::Ran ran;
  dispatch(&ran);
}

}  // namespace xhal

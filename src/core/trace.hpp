// The op trace behind include/xhal/trace.hpp: one Chrome/Perfetto "complete" event per op call,
// appended to the file as the call returns (on GPUs, once the device has timed it).
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
// Opens XHAL_TRACE's file, once: the first op call and start_trace call it first, so a later first
// op call cannot replace the file start_trace chose.
void read_trace_env();

// Host nanoseconds on the trace's clock.
int64_t now_ns();

// Device time of one call: a timed event recorded on the call's stream before the kernel and one
// after. Empty when the backend has no timed events (the CPU: host time is its device time) or
// they could not be made. Owns its events (destroyed with it); movable, so that a trace event can
// keep it until the device has finished.
class DeviceTiming {
 public:
  DeviceTiming(const xhal_op_call& call, Device device);  // records the start event
  ~DeviceTiming();
  DeviceTiming(DeviceTiming&& other) noexcept;
  DeviceTiming& operator=(DeviceTiming&& other) noexcept;
  void stop();  // records the end event
  bool timed() const { return end_ != nullptr; }
  // XHAL_OK once the end event has completed, XHAL_NOT_READY before (waiting for it when `wait`),
  // or an error.
  xhal_status finished(bool wait) const;
  // Microseconds between the two events, once finished; nothing when they cannot be read.
  std::optional<double> elapsed_us() const;

 private:
  void release();  // destroys the events
  const xhal_plugin_api* api_ = nullptr;
  int32_t device_ = 0;
  void* stream_ = nullptr;
  void* start_ = nullptr;
  void* end_ = nullptr;
};

// Appends the event of one call that ran `ran` from start_ns to end_ns (nothing if no trace is
// open). With device timing, the event is written once its end event has completed (checked at
// each later call, and waited for by stop_trace) with args.device_time_us.
void record_op(const xhal_op_call& call, Device device, const Registry::Ran& ran, int64_t start_ns, int64_t end_ns,
               DeviceTiming timing);

}  // namespace xhal::trace

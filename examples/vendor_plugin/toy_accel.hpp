// toyaccel: a pretend accelerator, the smallest complete backend plugin. Its "device memory" is host
// memory handed out by its own allocator (with a capacity, so running out is a real error), its
// streams run work at once, and its kernels are its own plain loops. It has no attention: the
// conformance suite shows those ops as unsupported by name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

#include "xhal/plugin.h"

namespace toyaccel {

// The plugin instance: every table member and every kernel receives it as `self` or `ctx`.
class Device {
 public:
  static constexpr size_t kCapacity = size_t(4) << 30;  // the pretend device's memory

  xhal_status allocate(size_t bytes, void** ptr, char* msg, size_t msg_len);
  xhal_status release(void* ptr, char* msg, size_t msg_len);
  size_t used() const;

 private:
  mutable std::mutex mutex_;
  std::map<void*, size_t> blocks_;  // every live allocation and its size
  size_t used_ = 0;
};

// Fills the device members of the table (memory, streams, events, queries).
void fill_device_table(xhal_plugin_api* api);
// Registers the kernels: rms_norm, swiglu, rope, linear in f32, f16 and bf16.
void register_kernels(const xhal_host_api* host);

}  // namespace toyaccel

// DeviceManager: the process-wide entry point. Created lazily and thread-safely on first use; it
// loads the plugins, enumerates devices (never throws while doing so: a broken plugin or driver is
// recorded with its reason) and owns one caching allocator per device.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "xhal/device.hpp"
#include "xhal/stream.hpp"

namespace xhal {

struct BackendInfo {
  std::string name;  // "cpu", "cuda", ... or the file name of a plugin that failed early
  bool loaded = false;  // the plugin loaded and initialised
  std::string reason;  // why it did not load, or why it has no device
  std::string path;  // the plugin file
  std::string version;
  int device_count = 0;
};

struct DeviceProperties {
  std::string name;
  std::string arch;
  uint64_t total_memory = 0;
  int compute_units = 0;
  int warp_size = 0;
};

struct MemoryStatus {
  size_t free = 0, total = 0;  // from the driver
  size_t allocated = 0;  // bytes handed out by the allocator and not yet freed
  size_t reserved = 0;  // bytes the allocator holds from the driver
  size_t peak_allocated = 0;
  size_t num_allocs = 0;
  size_t num_ooms = 0;
};

class DeviceManager {
 public:
  static DeviceManager& instance();

  std::vector<BackendInfo> backends() const;
  std::vector<Device> devices() const;
  bool has_device(Device device) const;

  // The device BACKEND_TYPE selects (see docs/configuration.md). Throws Error(invalid_argument) for
  // an unknown name and Error(backend_unavailable) when an explicit choice has no plugin or device.
  Device default_device() const;
  // Why default_device() chose what it chose (for `auto`), or the explicit choice.
  std::string default_device_reason() const;

  DeviceProperties properties(Device device) const;
  MemoryStatus memory_status(Device device) const;
  void empty_cache(Device device);
  void reset_peak_stats(Device device);
  void synchronize(Device device);

  Stream default_stream(Device device) const;
  Stream current_stream(Device device) const;  // per thread; the default stream until set
  void set_current_stream(const Stream& stream);
  Stream create_stream(Device device);
  // Adopts a framework's stream (cudaStream_t, hipStream_t); the caller keeps ownership.
  Stream wrap_stream(Device device, void* native);
  Event create_event(Device device);
  // An event that also records when the stream reached it, for Event::elapsed_ms: timing on the
  // device, without the launch and synchronisation a host clock would count. `unsupported` where
  // the backend cannot time.
  Event create_timed_event(Device device);

  // Loads one more plugin file (beyond the search path). Returns its record; never throws for a
  // broken plugin (the reason is in the record).
  BackendInfo load_plugin(const std::string& path);

  DeviceManager(const DeviceManager&) = delete;
  DeviceManager& operator=(const DeviceManager&) = delete;

 private:
  DeviceManager();
  ~DeviceManager();
};

}  // namespace xhal

// Streams and events. A Stream is a cheap, copyable handle; streams created by xhal are destroyed
// when the last handle goes, wrapped ones (DeviceManager::wrap_stream) stay owned by the caller.
// The CPU backend runs ops synchronously, so its streams and events are always complete.
#pragma once

#include <memory>

#include "xhal/device.hpp"

namespace xhal {

class Stream {
 public:
  Stream() = default;
  Device device() const { return device_; }
  void* native() const { return native_.get(); }  // cudaStream_t / hipStream_t; NULL = default
  void synchronize() const;
  friend bool operator==(const Stream& a, const Stream& b) {
    return a.device_ == b.device_ && a.native() == b.native();
  }

 private:
  friend class DeviceManager;
  Stream(Device device, std::shared_ptr<void> native) : device_(device), native_(std::move(native)) {}
  Device device_;
  std::shared_ptr<void> native_;
};

class Event {
 public:
  Event() = default;
  Device device() const { return device_; }
  void record(const Stream& stream);
  bool query() const;  // true when the recorded work has finished
  void synchronize() const;
  void block(const Stream& stream) const;  // make `stream` wait for this event
  void* native() const { return native_.get(); }
  bool timed() const { return timed_; }  // made by DeviceManager::create_timed_event
  // Milliseconds of device time from this event to `end`, both timed events of one device,
  // recorded and complete (as torch.cuda.Event.elapsed_time). Throws invalid_argument otherwise.
  double elapsed_ms(const Event& end) const;

 private:
  friend class DeviceManager;
  Event(Device device, std::shared_ptr<void> native, bool timed)
      : device_(device), native_(std::move(native)), timed_(timed) {}
  Device device_;
  std::shared_ptr<void> native_;
  bool timed_ = false;
};

}  // namespace xhal

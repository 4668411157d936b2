// Tensor: owns contiguous memory from the device's caching allocator; the memory returns to the
// allocator when the last copy of the Tensor goes. Use view() (or the implicit conversion) to pass
// it to ops.
#pragma once

#include <memory>
#include <vector>

#include "xhal/stream.hpp"
#include "xhal/tensor_view.hpp"

namespace xhal {

class Tensor {
 public:
  Tensor() = default;
  // Uninitialised memory, allocated for use on `stream` (default: the device's current stream).
  static Tensor empty(const std::vector<int64_t>& shape, DType dtype, Device device, const Stream* stream = nullptr);
  // A new tensor on `device` holding a copy of `host` (numel * dtype_size bytes).
  static Tensor from_host(const void* host, const std::vector<int64_t>& shape, DType dtype, Device device);

  void copy_from_host(const void* host);  // nbytes() bytes; synchronous
  void copy_to_host(void* host) const;  // nbytes() bytes; synchronous
  Tensor to(Device device) const;  // a copy on another device (through the host if needed)

  const TensorView& view() const { return view_; }
  operator const TensorView&() const { return view_; }  // NOLINT: pass a Tensor where a view is wanted
  void* data() const { return view_.data(); }
  DType dtype() const { return view_.dtype(); }
  Device device() const { return view_.device(); }
  int64_t numel() const { return view_.numel(); }
  size_t nbytes() const { return view_.nbytes(); }
  int64_t size(int dim) const { return view_.size(dim); }

 private:
  std::shared_ptr<void> storage_;
  TensorView view_;
};

// Copies between views of equal shape and dtype on any devices; both must be contiguous. Returns
// when the copy is done.
void copy(const TensorView& dst, const TensorView& src);
// Queues the same copy within one device on `stream` and returns (the CPU backend copies before
// returning): ordered with the ops on that stream, as a framework's device-to-device copy.
void copy_async(const TensorView& dst, const TensorView& src, const Stream& stream);

}  // namespace xhal

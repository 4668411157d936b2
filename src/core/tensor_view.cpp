#include "xhal/tensor_view.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

#include "core/runtime.hpp"
#include "core/text_format.hpp"
#include "xhal/error.hpp"

namespace xhal {
namespace {

// The four fixed backends have DLPack's own codes; any other backend's plugin declares the code
// of its memory (kDLExtDev or the vendor's).
std::optional<DeviceType> device_type_from_dlpack(int32_t type) {
  switch (type) {
    case kDLCPU: return DeviceType::cpu;
    case kDLCUDA: return DeviceType::cuda;
    case kDLROCM: return DeviceType::hip;
    case 14: return DeviceType::ze;  // kDLOneAPI (DLPack >= 0.7)
    default: return Runtime::get().backend_for_dlpack(type);
  }
}

int32_t device_type_to_dlpack(DeviceType type) {
  switch (type) {
    case DeviceType::cpu: return kDLCPU;
    case DeviceType::cuda: return kDLCUDA;
    case DeviceType::hip: return kDLROCM;
    case DeviceType::ze: return 14;
  }
  const BackendState* backend = Runtime::get().backend(type);
  return backend != nullptr ? backend->plugin.api.dlpack_device_type : int32_t(kDLExtDev);
}

}  // namespace

void TensorView::set_shape(const std::vector<int64_t>& shape) {
  if (shape.size() > kMaxRank) {
    throw Error(Errc::invalid_argument,
                format_text("TensorView: rank {} exceeds the maximum of {}", shape.size(), kMaxRank));
  }
  ndim_ = static_cast<int>(shape.size());
  int64_t bytes = int64_t(dtype_size(dtype_));
  for (int i = 0; i < ndim_; ++i) {
    if (shape[i] < 0) {
      throw Error(Errc::invalid_argument, format_text("TensorView: dimension {} has negative size {}", i, shape[i]));
    }
    shape_[i] = shape[i];
  }
  // numel() and nbytes() must be exact for every view: a size that wrapped once made a 4-byte
  // tensor of 2^62 + 1 floats.
  for (int i = 0; i < ndim_; ++i) {
    if (__builtin_mul_overflow(bytes, shape_[i], &bytes)) {
      const bool empty = std::find(shape.begin(), shape.end(), int64_t(0)) != shape.end();
      if (empty) break;
      throw Error(Errc::invalid_argument, format_text("TensorView: shape [{}] of {} holds more than 2^63 - 1 bytes",
                                                      join_text(shape, ", "), dtype_name(dtype_)));
    }
  }
}

TensorView::TensorView(void* data, DType dtype, const std::vector<int64_t>& shape, Device device)
    : data_(data), dtype_(dtype), device_(device) {
  set_shape(shape);
  int64_t stride = 1;
  for (int i = ndim_ - 1; i >= 0; --i) {
    strides_[i] = stride;
    if (__builtin_mul_overflow(stride, std::max<int64_t>(shape_[i], 1), &stride)) {
      throw Error(Errc::invalid_argument,
                  format_text("TensorView: contiguous strides of shape [{}] overflow 64 bits", join_text(shape, ", ")));
    }
  }
}

TensorView::TensorView(void* data, DType dtype, const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
                       Device device)
    : data_(data), dtype_(dtype), device_(device) {
  set_shape(shape);
  if (strides.size() != shape.size()) {
    throw Error(Errc::invalid_argument,
                format_text("TensorView: {} strides given for rank {}", strides.size(), shape.size()));
  }
  std::copy(strides.begin(), strides.end(), strides_.begin());
}

TensorView TensorView::from_dlpack(const DLTensor& t) {
  // Read as an integer: a C caller may store any value in the enum, which C++ must not load as
  // DLDeviceType.
  int32_t raw_type = 0;
  static_assert(sizeof(t.device.device_type) == sizeof raw_type);
  std::memcpy(&raw_type, &t.device.device_type, sizeof raw_type);
  auto type = device_type_from_dlpack(raw_type);
  if (!type) {
    throw Error(Errc::invalid_argument, format_text("TensorView::from_dlpack: DLPack device type {} is not supported; "
                                                    "expected CPU, CUDA, ROCM or OneAPI",
                                                    raw_type));
  }
  if (t.ndim < 0 || t.ndim > kMaxRank) {
    throw Error(Errc::invalid_argument,
                format_text("TensorView::from_dlpack: ndim {} is outside 0..{}", t.ndim, kMaxRank));
  }
  if (t.ndim > 0 && t.shape == nullptr) {
    throw Error(Errc::invalid_argument, format_text("TensorView::from_dlpack: ndim is {} but shape is NULL", t.ndim));
  }
  std::vector<int64_t> shape(t.shape, t.shape + t.ndim);
  // The offset is added only to a real pointer, and must not wrap the address space.
  uintptr_t address = 0;
  if (t.data == nullptr && t.byte_offset != 0) {
    throw Error(Errc::invalid_argument,
                format_text("TensorView::from_dlpack: data is NULL but byte_offset is {}", t.byte_offset));
  }
  if (__builtin_add_overflow(reinterpret_cast<uintptr_t>(t.data), t.byte_offset, &address)) {
    throw Error(Errc::invalid_argument,
                format_text("TensorView::from_dlpack: data {} + byte_offset {} wraps the address space", t.data,
                            t.byte_offset));
  }
  void* data = t.data == nullptr ? nullptr : static_cast<char*>(t.data) + t.byte_offset;
  Device device{*type, t.device.device_id};
  DType dtype = dtype_from_dlpack(t.dtype);
  if (t.strides == nullptr) return TensorView(data, dtype, shape, device);
  return TensorView(data, dtype, shape, std::vector<int64_t>(t.strides, t.strides + t.ndim), device);
}

DLTensor TensorView::to_dlpack() const {
  DLTensor t{};
  t.data = data_;
  t.device = {static_cast<DLDeviceType>(device_type_to_dlpack(device_.type)), device_.index};
  t.ndim = ndim_;
  t.dtype = xhal::to_dlpack(dtype_);
  t.shape = const_cast<int64_t*>(shape_.data());
  t.strides = const_cast<int64_t*>(strides_.data());
  t.byte_offset = 0;
  return t;
}

int64_t TensorView::numel() const {  // exact: set_shape bounds numel * element size
  int64_t n = 1;
  for (int i = 0; i < ndim_; ++i) n *= shape_[i];
  return n;
}

size_t TensorView::nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }

bool TensorView::is_contiguous() const {
  int64_t expected = 1;
  for (int i = ndim_ - 1; i >= 0; --i) {
    if (shape_[i] != 1 && strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

TensorView TensorView::transpose(int dim0, int dim1) const {
  dim0 = wrap(dim0);
  dim1 = wrap(dim1);
  if (dim0 < 0 || dim0 >= ndim_ || dim1 < 0 || dim1 >= ndim_) {
    throw Error(Errc::invalid_argument,
                format_text("TensorView::transpose: dims ({}, {}) out of range for rank {}", dim0, dim1, ndim_));
  }
  TensorView out = *this;
  std::swap(out.shape_[dim0], out.shape_[dim1]);
  std::swap(out.strides_[dim0], out.strides_[dim1]);
  return out;
}

}  // namespace xhal

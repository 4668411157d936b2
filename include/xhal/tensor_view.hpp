// TensorView: a non-owning description of memory as a tensor (data, dtype, shape, strides in
// elements, device). Copying a view copies the description, never the data. Views are plain values
// and thread-compatible.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <dlpack/dlpack.h>

#include "xhal/device.hpp"
#include "xhal/dtype.hpp"

namespace xhal {

inline constexpr int kMaxRank = 8;

// A read-only run of a view's sizes or strides (what std::span<const int64_t> gives in C++20;
// public headers compile as C++17). Valid while the view it came from is.
class Dims {
 public:
  Dims(const int64_t* data, size_t size) : data_(data), size_(size) {}
  const int64_t* begin() const { return data_; }
  const int64_t* end() const { return data_ + size_; }
  const int64_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t operator[](size_t i) const { return data_[i]; }

 private:
  const int64_t* data_;
  size_t size_;
};

class TensorView {
 public:
  TensorView() = default;
  // Contiguous (row-major) view.
  TensorView(void* data, DType dtype, const std::vector<int64_t>& shape, Device device = Device::cpu());
  // Strided view; strides are in elements.
  TensorView(void* data, DType dtype, const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
             Device device = Device::cpu());

  // Zero-copy import; throws Error(invalid_argument) for unsupported dtypes, devices or ranks.
  // byte_offset is folded into data. A NULL strides field means contiguous.
  static TensorView from_dlpack(const DLTensor& tensor);
  // Zero-copy export; the DLTensor's shape and strides point into this view, which must outlive it.
  DLTensor to_dlpack() const;

  void* data() const { return data_; }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  int ndim() const { return ndim_; }
  int64_t size(int dim) const { return shape_[wrap(dim)]; }
  int64_t stride(int dim) const { return strides_[wrap(dim)]; }
  Dims shape() const { return {shape_.data(), size_t(ndim_)}; }
  Dims strides() const { return {strides_.data(), size_t(ndim_)}; }
  int64_t numel() const;
  size_t nbytes() const;  // numel * element size (the bytes a contiguous copy would take)
  bool is_contiguous() const;

  // Views of the same memory with two dimensions swapped.
  TensorView transpose(int dim0, int dim1) const;

 private:
  int wrap(int dim) const { return dim < 0 ? dim + ndim_ : dim; }
  void set_shape(const std::vector<int64_t>& shape);
  void* data_ = nullptr;
  DType dtype_ = DType::f32;
  Device device_;
  int ndim_ = 0;
  std::array<int64_t, kMaxRank> shape_{};
  std::array<int64_t, kMaxRank> strides_{};
};

}  // namespace xhal

// Host <-> device helpers the examples share: f32 host data uploaded in any float dtype, tensors
// downloaded back as f32, and strided views of a tensor at an element offset.
#pragma once

#include <cstdint>
#include <functional>
#include <numeric>
#include <vector>

#include "xhal/xhal.hpp"

namespace examples {

inline xhal::Tensor upload(const float* src, const std::vector<int64_t>& shape, xhal::DType dtype,
                           xhal::Device device) {
  const size_t n = size_t(std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>()));
  if (dtype == xhal::DType::f32) return xhal::Tensor::from_host(src, shape, dtype, device);
  std::vector<uint16_t> bits(n);
  for (size_t i = 0; i < n; ++i) {
    bits[i] = dtype == xhal::DType::bf16 ? xhal::float_to_bf16(src[i]) : xhal::float_to_f16(src[i]);
  }
  return xhal::Tensor::from_host(bits.data(), shape, dtype, device);
}

inline std::vector<float> download(const xhal::Tensor& t) {
  std::vector<float> out(size_t(t.numel()));
  if (t.dtype() == xhal::DType::f32) {
    t.copy_to_host(out.data());
    return out;
  }
  std::vector<uint16_t> bits(out.size());
  t.copy_to_host(bits.data());
  for (size_t i = 0; i < bits.size(); ++i) {
    out[i] = t.dtype() == xhal::DType::bf16 ? xhal::bf16_to_float(bits[i]) : xhal::f16_to_float(bits[i]);
  }
  return out;
}

// A view of `t` shifted by `offset` elements with the given shape and strides.
inline xhal::TensorView slice(const xhal::Tensor& t, int64_t offset, std::vector<int64_t> shape,
                              std::vector<int64_t> strides) {
  char* base = static_cast<char*>(t.data()) + offset * int64_t(xhal::dtype_size(t.dtype()));
  return xhal::TensorView(base, t.dtype(), shape, strides, t.device());
}

// A contiguous view of `t` shifted by `offset` elements.
inline xhal::TensorView slice(const xhal::Tensor& t, int64_t offset, std::vector<int64_t> shape) {
  char* base = static_cast<char*>(t.data()) + offset * int64_t(xhal::dtype_size(t.dtype()));
  return xhal::TensorView(base, t.dtype(), shape, t.device());
}

}  // namespace examples

// Strided access to a DLTensor inside CPU kernels. Kernels assume the core validated shapes,
// dtypes and inner strides (see src/ops/).
#pragma once

#include <cstdint>

#include <dlpack/dlpack.h>

namespace xhal::cpu {

template <class T>
struct TensorRef {
  T* data = nullptr;
  const int64_t* shape = nullptr;
  const int64_t* strides = nullptr;
  int ndim = 0;

  TensorRef() = default;
  explicit TensorRef(const DLTensor* t)
      : data(t ? static_cast<T*>(t->data) : nullptr),
        shape(t ? t->shape : nullptr),
        strides(t ? t->strides : nullptr),
        ndim(t ? t->ndim : 0) {}

  explicit operator bool() const { return data != nullptr || (shape && numel() == 0); }
  int64_t size(int d) const { return shape[d < 0 ? d + ndim : d]; }
  int64_t stride(int d) const { return strides[d < 0 ? d + ndim : d]; }
  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= shape[d];
    return n;
  }
  // Element pointer at a multi-index given as separate arguments.
  template <class... I>
  T* at(I... idx) const {
    const int64_t index[] = {static_cast<int64_t>(idx)...};
    int64_t offset = 0;
    for (size_t d = 0; d < sizeof...(I); ++d) offset += index[d] * strides[d];
    return data + offset;
  }
  // Rows of the tensor viewed as [numel / size(-1), size(-1)]: pointer to the first element of row r.
  int64_t rows() const { return size(-1) == 0 ? 0 : numel() / size(-1); }
  T* row(int64_t r) const {
    int64_t offset = 0;
    for (int d = ndim - 2; d >= 0; --d) {
      offset += (r % shape[d]) * strides[d];
      r /= shape[d];
    }
    return data + offset;
  }
};

// Element i of a rank-1 index tensor (i32 or i64, any stride), as int64.
inline int64_t index_at(const DLTensor* t, int64_t i) {
  const int64_t offset = i * t->strides[0];
  if (t->dtype.bits == 32) return static_cast<const int32_t*>(t->data)[offset];
  return static_cast<const int64_t*>(t->data)[offset];
}

}  // namespace xhal::cpu

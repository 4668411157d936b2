// What the CPU argmax kernels share: the reference pick of a row (sample's greedy rows take it
// too) and the row loop: rows in parallel, each row's position from `position(row, n)`, written as
// the call's index dtype, and the element itself as the value (the same bits, NaN payloads too).
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/cpu/tensor_ref.hpp"
#include "kernels/kernel_registration.hpp"

namespace xhal::cpu {

// A row's pick in two passes: its largest value as f32 in a loop the compiler vectorises (a NaN
// noted apart), then the first position holding it (or the first NaN), read again from the cache.
// The reference argmax kernel's, and sample's for greedy rows.
template <class E>
int64_t argmax_position(const typename E::Storage* row, int64_t n) {
  float largest = -INFINITY;
  bool nan = false;
#pragma omp simd reduction(max : largest) reduction(|| : nan)
  for (int64_t i = 0; i < n; ++i) {
    const float v = E::load(row[i]);
    nan = nan || v != v;
    largest = v > largest ? v : largest;
  }
  for (int64_t i = 0; i < n; ++i) {
    const float v = E::load(row[i]);
    if (nan ? v != v : v == largest) return i;
  }
  return 0;  // not reached: the first pass's largest value is in the row
}

template <class S, class Position>
void argmax_rows(const xhal_op_call* c, Position&& position) {
  const TensorRef<const S> logits(c->tensors[XHAL_ARGMAX_LOGITS]);
  const DLTensor* indices = c->tensors[XHAL_ARGMAX_INDICES];
  const DLTensor* values = kernels::tensor_at(c, XHAL_ARGMAX_VALUES);
  const bool wide = indices->dtype.bits == 64;
  const int64_t n = logits.size(-1), rows = logits.rows();
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const S* row = logits.row(r);
    const int64_t i = position(row, n);
    if (wide) {
      static_cast<int64_t*>(indices->data)[r] = i;
    } else {
      static_cast<int32_t*>(indices->data)[r] = int32_t(i);
    }
    if (values != nullptr) static_cast<S*>(values->data)[r] = row[i];
  }
}

}  // namespace xhal::cpu

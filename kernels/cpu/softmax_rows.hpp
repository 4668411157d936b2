// The loop of softmax's CPU kernels: rows in parallel, each row's lse, then exp(x - lse) written
// over the row (out may be x). A kernel supplies the two row functions (row_lse.hpp's or their
// SIMD forms).
#pragma once

#include <cstdint>

#include "kernel_registration.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {

template <class E, class Lse, class ExpRow>
xhal_status softmax_rows(const xhal_op_call* c, Lse row_lse, ExpRow exp_row) {
  using S = typename E::Storage;
  const TensorRef<const S> x(c->tensors[XHAL_SOFTMAX_X]);
  const TensorRef<S> out(c->tensors[XHAL_SOFTMAX_OUT]);
  const int64_t n = x.size(-1), rows = x.rows();
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const S* row = x.row(r);
    exp_row(row, out.row(r), n, row_lse(row, n), 1.0f, 0.0f);
  }
  return XHAL_OK;
}

}  // namespace xhal::cpu

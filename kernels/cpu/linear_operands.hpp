// linear's tensors as converted_gemm (and its BLAS form) reads them: rows of x and w converted to
// f32 from the storage dtype E, and out = sum + bias rounded once to E.
#pragma once

#include "element.hpp"
#include "tensor_ref.hpp"
#include "xhal/op_table.h"

namespace xhal::cpu {

template <class E>
struct LinearOperands {
  using S = typename E::Storage;
  explicit LinearOperands(const xhal_op_call* c)
      : x(c->tensors[XHAL_LINEAR_X]),
        w(c->tensors[XHAL_LINEAR_W]),
        bias(c->tensors[XHAL_LINEAR_BIAS]),
        out(c->tensors[XHAL_LINEAR_OUT]) {}

  int64_t M() const { return x.size(0); }
  int64_t K() const { return x.size(1); }
  int64_t N() const { return w.size(0); }
  void load_x(int64_t m, float* row) const { load_row<E>(x.at(m, 0), row, K()); }
  void load_w(int64_t n, float* row) const { load_row<E>(w.at(n, 0), row, K()); }
  void store(int64_t m, int64_t n0, const float* sums, int64_t count) const {
    for (int64_t j = 0; j < count; ++j) {
      *out.at(m, n0 + j) = E::store(sums[j] + (bias ? E::load(*bias.at(n0 + j)) : 0.0f));
    }
  }

  TensorRef<const S> x, w, bias;
  TensorRef<S> out;
};

}  // namespace xhal::cpu

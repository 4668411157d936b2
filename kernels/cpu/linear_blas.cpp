// linear on the CPU through OpenBLAS's sgemm, above the reference kernel of linear.cpp. f32 goes
// to the BLAS as it is (the bias first written into out, then accumulated onto); f16 and bf16 are
// converted to f32 by converted_gemm_blas and stored back with the bias.
#include "blas.hpp"
#include "converted_gemm_blas.hpp"
#include "element.hpp"
#include "kernel_registration.hpp"
#include "linear_operands.hpp"
#include "scratch.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {
namespace {

// BLAS takes rows that do not overlap, in increasing order.
const char* blas_supports(void*, const xhal_op_call* c) {
  for (int slot : {XHAL_LINEAR_X, XHAL_LINEAR_W, XHAL_LINEAR_OUT}) {
    const DLTensor* t = c->tensors[slot];
    if (!blas_rows_apart(t)) return "rows overlap or run backwards";
  }
  return nullptr;
}

template <class E>
struct LinearBlas {
  using S = typename E::Storage;
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    const DLTensor *xt = c->tensors[XHAL_LINEAR_X], *wt = c->tensors[XHAL_LINEAR_W], *ot = c->tensors[XHAL_LINEAR_OUT];
    const TensorRef<const S> x(xt), w(wt), bias(c->tensors[XHAL_LINEAR_BIAS]);
    const TensorRef<S> out(ot);
    const int64_t M = x.size(0), K = x.size(1), N = w.size(0);
    if (M == 0 || N == 0) return XHAL_OK;
    auto bias_of = [&](int64_t n) { return bias ? E::load(*bias.at(n)) : 0.0f; };
    if constexpr (E::kDType == XHAL_DTYPE_F32) {
      if (bias) {
#pragma omp parallel for schedule(static)
        for (int64_t m = 0; m < M; ++m) {
          for (int64_t n = 0; n < N; ++n) *out.at(m, n) = bias_of(n);
        }
      }
      gemm_nt(M, N, K, x.data, blas_leading_dim(xt), w.data, blas_leading_dim(wt), out.data, blas_leading_dim(ot),
              bool(bias));
      return XHAL_OK;
    } else {
      return converted_gemm_blas(c, LinearOperands<E>(c), "linear", msg, len);
    }
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_fast_kernels<LinearBlas>(host, "cpu.linear_blas", XHAL_OP_LINEAR, blas_supports);
}

}  // namespace xhal::cpu

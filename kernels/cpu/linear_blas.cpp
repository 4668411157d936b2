// linear on the CPU through OpenBLAS's sgemm, above the reference kernel of linear.cpp. f32 goes
// to the BLAS as it is (the bias first written into out, then accumulated onto). f16 and bf16 are
// converted to f32 (x once, w a panel of kPanel rows at a time, so scratch stays bounded), each
// panel multiplied into an f32 block and stored back with the bias: one extra pass over x, w and
// out, against 2·M·N·K flops of BLAS work.
#include <algorithm>

#include "blas.hpp"
#include "dense_matrix.hpp"
#include "element.hpp"
#include "kernel_registration.hpp"
#include "scratch.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {
namespace {

constexpr int64_t kPanel = 1024;  // rows of w converted per sgemm

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
      const int64_t panel = std::min(kPanel, N);
      Scratch xf(c, matrix_bytes(M, K));
      Scratch wf(c, matrix_bytes(panel, K));
      Scratch of(c, matrix_bytes(M, panel));
      if (xf.get() == nullptr || wf.get() == nullptr || of.get() == nullptr) {
        return kernel_error(msg, len, XHAL_ERR_OUT_OF_MEMORY, "linear: no memory for the f32 copies of x and w");
      }
      load_matrix<E>(x, xf.get());
      for (int64_t n0 = 0; n0 < N; n0 += panel) {
        const int64_t nb = std::min(panel, N - n0);
#pragma omp parallel for schedule(static)
        for (int64_t n = 0; n < nb; ++n) load_row<E>(w.at(n0 + n, 0), wf.get() + n * K, K);
        gemm_nt(M, nb, K, xf.get(), K, wf.get(), K, of.get(), nb, false);
#pragma omp parallel for schedule(static)
        for (int64_t m = 0; m < M; ++m) {
          const float* src = of.get() + m * nb;
          for (int64_t n = 0; n < nb; ++n) *out.at(m, n0 + n) = E::store(src[n] + bias_of(n0 + n));
        }
      }
      return XHAL_OK;
    }
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_fast_kernels<LinearBlas>(host, "cpu.linear_blas", XHAL_OP_LINEAR, blas_supports);
}

}  // namespace xhal::cpu

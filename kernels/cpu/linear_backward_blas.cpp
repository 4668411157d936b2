// linear_backward on the CPU through OpenBLAS's sgemm, above the reference of linear_backward.cpp:
// dx = dout · w (gemm_nn) and dw = doutᵀ · x (gemm_tn). f32 goes to the BLAS as it is; f16 and
// bf16 are converted to f32 once (dout, and w or x as the gradients need), and each gradient is
// computed kPanel rows at a time into an f32 block stored back in its dtype. dbias: column sums of
// dout, in an order fixed by the shape.
#include <algorithm>

#include "blas.hpp"
#include "column_sums.hpp"
#include "dense_matrix.hpp"
#include "element.hpp"
#include "kernel_registration.hpp"
#include "scratch.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {
namespace {

constexpr int64_t kPanel = 1024;  // rows of a 16-bit gradient per sgemm

// BLAS takes rows that do not overlap, in increasing order.
const char* blas_supports(void*, const xhal_op_call* c) {
  for (int slot : {XHAL_LINEAR_BACKWARD_DOUT, XHAL_LINEAR_BACKWARD_X, XHAL_LINEAR_BACKWARD_W, XHAL_LINEAR_BACKWARD_DX,
                   XHAL_LINEAR_BACKWARD_DW}) {
    const DLTensor* t = c->tensors[slot];
    if (t != nullptr && !blas_rows_apart(t)) return "rows overlap or run backwards";
  }
  return nullptr;
}

template <class E>
void fill_zero(const TensorRef<typename E::Storage>& t) {
  for (int64_t r = 0; r < t.size(0); ++r) std::fill(t.at(r, 0), t.at(r, 0) + t.size(1), E::store(0.0f));
}

template <class E>
struct LinearBackwardBlas {
  using S = typename E::Storage;
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    const DLTensor* dout_t = c->tensors[XHAL_LINEAR_BACKWARD_DOUT];
    const DLTensor *x_t = c->tensors[XHAL_LINEAR_BACKWARD_X], *w_t = c->tensors[XHAL_LINEAR_BACKWARD_W];
    const DLTensor *dx_t = c->tensors[XHAL_LINEAR_BACKWARD_DX], *dw_t = c->tensors[XHAL_LINEAR_BACKWARD_DW];
    const TensorRef<const S> dout(dout_t), x(x_t), w(w_t);
    const TensorRef<S> dx(dx_t), dw(dw_t), dbias(c->tensors[XHAL_LINEAR_BACKWARD_DBIAS]);
    const int64_t M = dout.size(0), N = dout.size(1), K = x.size(1);
    // A gradient whose sum is empty (N = 0 for dx, M = 0 for dw) is zero; one without elements
    // (K = 0) has nothing to write.
    const bool want_dx = dx && M > 0 && K > 0, want_dw = dw && N > 0 && K > 0;
    if (want_dx && N == 0) fill_zero<E>(dx);
    if (want_dw && M == 0) fill_zero<E>(dw);
    const bool gemm_dx = want_dx && N > 0, gemm_dw = want_dw && M > 0;
    // dbias last, once nothing can fail (the 16-bit path's scratch may be refused).
    const auto bias_gradient = [&] {
      if (dbias) column_sums<E>(dout, dbias.data, dbias.stride(0));
      return XHAL_OK;
    };
    if (!gemm_dx && !gemm_dw) return bias_gradient();
    if constexpr (E::kDType == XHAL_DTYPE_F32) {
      if (gemm_dx) {
        gemm_nn(M, K, N, dout.data, blas_leading_dim(dout_t), w.data, blas_leading_dim(w_t), dx.data,
                blas_leading_dim(dx_t), false);
      }
      if (gemm_dw) {
        gemm_tn(N, K, M, dout.data, blas_leading_dim(dout_t), x.data, blas_leading_dim(x_t), dw.data,
                blas_leading_dim(dw_t), false);
      }
      return bias_gradient();
    } else {
      // dout [M,N]; the operand (w [N,K] or x [M,K], one at a time); a panel of the gradient.
      const int64_t operand_rows = std::max(gemm_dx ? N : 0, gemm_dw ? M : 0);
      Scratch doutf(c, matrix_bytes(M, N));
      Scratch operand(c, matrix_bytes(operand_rows, K));
      Scratch panel(c, matrix_bytes(kPanel, K));
      if (doutf.data() == nullptr || operand.data() == nullptr || panel.data() == nullptr) {
        return kernel_error(msg, len, XHAL_ERR_OUT_OF_MEMORY,
                            "linear_backward: no memory for the f32 copies of dout and its operands");
      }
      load_matrix<E>(dout, doutf.get());
      // grad[rows, K] in panels: multiply(first row, rows in the panel, f32 block) fills the block.
      const auto panels = [&](const TensorRef<S>& grad, const auto& multiply) {
        for (int64_t r0 = 0; r0 < grad.size(0); r0 += kPanel) {
          const int64_t rows = std::min(kPanel, grad.size(0) - r0);
          multiply(r0, rows, panel.get());
#pragma omp parallel for schedule(static)
          for (int64_t r = 0; r < rows; ++r) store_row<E>(panel.get() + r * K, grad.at(r0 + r, 0), K);
        }
      };
      if (gemm_dx) {
        load_matrix<E>(w, operand.get());
        panels(dx, [&](int64_t m0, int64_t rows, float* out) {
          gemm_nn(rows, K, N, doutf.get() + m0 * N, N, operand.get(), K, out, K, false);
        });
      }
      if (gemm_dw) {
        load_matrix<E>(x, operand.get());
        panels(dw, [&](int64_t n0, int64_t rows, float* out) {
          gemm_tn(rows, K, M, doutf.get() + n0, N, operand.get(), K, out, K, false);
        });
      }
      return bias_gradient();
    }
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_fast_kernels<LinearBackwardBlas>(host, "cpu.linear_backward_blas", XHAL_OP_LINEAR_BACKWARD, blas_supports);
}

}  // namespace xhal::cpu

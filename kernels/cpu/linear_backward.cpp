// linear_backward on the CPU, the reference: dx rows as sums of w's rows weighted by a row of dout,
// dw rows as sums of x's rows weighted by a column of dout, each in f32 in a thread's workspace, and
// dbias as column sums of dout. w and x are converted to f32 once (so a 16-bit element is not
// converted again for every row that uses it). linear_backward_blas.cpp is registered above it.
#include <algorithm>

#include "column_sums.hpp"
#include "dense_matrix.hpp"
#include "element.hpp"
#include "kernel_registration.hpp"
#include "scratch.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {
namespace {

template <class E>
struct LinearBackwardKernel {
  using S = typename E::Storage;
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    const TensorRef<const S> dout(c->tensors[XHAL_LINEAR_BACKWARD_DOUT]);
    const TensorRef<const S> x(c->tensors[XHAL_LINEAR_BACKWARD_X]), w(c->tensors[XHAL_LINEAR_BACKWARD_W]);
    const TensorRef<S> dx(kernels::tensor_at(c, XHAL_LINEAR_BACKWARD_DX));
    const TensorRef<S> dw(kernels::tensor_at(c, XHAL_LINEAR_BACKWARD_DW));
    const TensorRef<S> dbias(kernels::tensor_at(c, XHAL_LINEAR_BACKWARD_DBIAS));
    const int64_t M = dout.size(0), N = dout.size(1), K = x.size(1);
    // The f32 copy of the operand a gradient needs (w for dx, x for dw).
    const int64_t operand_rows = std::max(dx ? N : 0, dw ? M : 0);
    Scratch operand(c, matrix_bytes(operand_rows, K));
    const ThreadWorkspaces workspaces(c, checked_bytes(K, sizeof(float)), std::max(M, N));
    if (operand.data() == nullptr || !workspaces.ok()) return workspaces_refused(msg, len, "linear_backward");
    float* of = operand.get();
    // grad[i, :] = sum over j of weight(i, j) * of[j, :], for the rows i of grad and the `terms` rows j.
    const auto weighted_rows = [&](const TensorRef<S>& grad, int64_t terms, const auto& weight) {
#pragma omp parallel for schedule(static) num_threads(workspaces.threads())
      for (int64_t i = 0; i < grad.size(0); ++i) {
        float* acc = static_cast<float*>(workspaces.of_this_thread());
        std::fill(acc, acc + K, 0.0f);
        for (int64_t j = 0; j < terms; ++j) {
          const float d = weight(i, j);
          const float* row = of + j * K;
#pragma omp simd
          for (int64_t k = 0; k < K; ++k) acc[k] += d * row[k];
        }
        store_row<E>(acc, grad.at(i, 0), K);
      }
    };
    if (dx) {  // dx[m, :] = sum over n of dout[m, n] w[n, :]
      load_matrix<E>(w, of);
      weighted_rows(dx, N, [&](int64_t m, int64_t n) { return E::load(*dout.at(m, n)); });
    }
    if (dw) {  // dw[n, :] = sum over m of dout[m, n] x[m, :]
      load_matrix<E>(x, of);
      weighted_rows(dw, M, [&](int64_t n, int64_t m) { return E::load(*dout.at(m, n)); });
    }
    if (dbias) column_sums<E>(dout, dbias.data, dbias.stride(0));
    return XHAL_OK;
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<LinearBackwardKernel>(host, "cpu.linear_backward", XHAL_OP_LINEAR_BACKWARD);
}

}  // namespace xhal::cpu

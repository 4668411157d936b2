// linear_backward on any GPU, without a vendor BLAS: dx[M,K] = dout · w and dw[N,K] = doutᵀ · x
// through the tiled GEMM of tiled_gemm.cuh (w read along its columns for dx, dout and x along
// theirs for dw), dbias by column_sums. cuBLASLt's kernel is registered above it on cuda; on hip
// it is the linear_backward kernel.
#include "column_sums.hpp"
#include "tiled_gemm.cuh"

namespace xhal::gpu {
namespace {

template <class E>
struct LinearBackwardTiled {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    using T = typename E::T;
    const DLTensor* dout = c->tensors[XHAL_LINEAR_BACKWARD_DOUT];
    const DLTensor *x = c->tensors[XHAL_LINEAR_BACKWARD_X], *w = c->tensors[XHAL_LINEAR_BACKWARD_W];
    const DLTensor *dx = c->tensors[XHAL_LINEAR_BACKWARD_DX], *dw = c->tensors[XHAL_LINEAR_BACKWARD_DW];
    const DLTensor* dbias = c->tensors[XHAL_LINEAR_BACKWARD_DBIAS];
    const int64_t M = dout->shape[0], N = dout->shape[1], K = x->shape[1];
    const auto* dout_data = static_cast<const T*>(dout->data);
    xhal_status s = XHAL_OK;
    if (dx != nullptr) {  // dx[m, k] = sum over n of dout[m, n] w[n, k]
      s = launch_tiled_gemm<E>({dout_data, dout->strides[0], 1}, {static_cast<const T*>(w->data), 1, w->strides[0]},
                               nullptr, 0, static_cast<T*>(dx->data), dx->strides[0], M, K, N, c->stream,
                               "tiled linear_backward (dx)", msg, len);
    }
    if (s == XHAL_OK && dw != nullptr) {  // dw[n, k] = sum over m of dout[m, n] x[m, k]
      s = launch_tiled_gemm<E>({dout_data, 1, dout->strides[0]}, {static_cast<const T*>(x->data), 1, x->strides[0]},
                               nullptr, 0, static_cast<T*>(dw->data), dw->strides[0], N, K, M, c->stream,
                               "tiled linear_backward (dw)", msg, len);
    }
    if (s == XHAL_OK && dbias != nullptr) s = column_sums(c, dout, dbias, msg, len);
    return s;
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<LinearBackwardTiled>(host, XHAL_GPU_BACKEND ".linear_backward_tiled", XHAL_OP_LINEAR_BACKWARD,
                                              {0, true, nullptr});
}

}  // namespace xhal::gpu

// linear on any GPU, without a vendor BLAS: out[M,N] = x[M,K] w[N,K]^T + bias, the tiled SIMT
// GEMM of tiled_gemm.cuh. A vendor library (cuBLASLt on cuda) is registered above it where one
// exists; on hip it is the linear kernel (Debian has no hipBLAS).
#include "tiled_gemm.cuh"

namespace xhal::gpu {
namespace {

template <class E>
struct LinearTiled {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    using T = typename E::T;
    const DLTensor *x = c->tensors[XHAL_LINEAR_X], *w = c->tensors[XHAL_LINEAR_W];
    const DLTensor *bias = c->tensors[XHAL_LINEAR_BIAS], *out = c->tensors[XHAL_LINEAR_OUT];
    const int64_t M = x->shape[0], K = x->shape[1], N = w->shape[0];
    return launch_tiled_gemm<E>(
        {static_cast<const T*>(x->data), x->strides[0], 1}, {static_cast<const T*>(w->data), w->strides[0], 1},
        bias != nullptr ? static_cast<const T*>(bias->data) : nullptr, bias != nullptr ? bias->strides[0] : 0,
        static_cast<T*>(out->data), out->strides[0], M, N, K, c->stream, "tiled linear", msg, len);
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<LinearTiled>(host, XHAL_GPU_BACKEND ".linear_tiled", XHAL_OP_LINEAR, {0, true, nullptr});
}

}  // namespace xhal::gpu

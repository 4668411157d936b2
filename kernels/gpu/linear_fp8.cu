// linear_fp8 on any GPU, without a vendor BLAS: the tiled SIMT GEMM of tiled_gemm.cuh with fp8
// codes decoded to f32 as they are staged and the scales and bias applied by its epilogue. Every
// format pair and layout; cuBLASLt's fp8 tensor-core kernel (sm_89+) is registered above it on cuda.
#include "tiled_gemm.cuh"
#include "xhal/fp8.hpp"

namespace xhal::gpu {
namespace {

// fp8 codes, element (row, k) at data[row * row_stride + k].
struct Fp8Operand {
  const uint8_t* data;
  int64_t row_stride, k_stride;
  bool e4m3;
  __device__ float load(int64_t i) const { return e4m3 ? f8_e4m3_to_float(data[i]) : f8_e5m2_to_float(data[i]); }
};

Fp8Operand fp8_operand(const DLTensor* t) {
  return {static_cast<const uint8_t*>(t->data), t->strides[0], 1, t->dtype.code == kDLPackFloat8E4M3FN};
}

// out[m, n] = sum * (x_scale * w_scale) + bias[n], the scales per tensor (stride 0) or per row.
template <class E>
struct ScaledEpilogue {
  const float *x_scale, *w_scale;
  int64_t x_scale_stride, w_scale_stride;
  tiled_gemm::BiasEpilogue<E> out;
  __device__ void operator()(int64_t m, int64_t n, float sum) const {
    out(m, n, sum * (x_scale[m * x_scale_stride] * w_scale[n * w_scale_stride]));
  }
};

template <class E>
struct LinearFp8Tiled {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    using T = typename E::T;
    const DLTensor *x = c->tensors[XHAL_LINEAR_FP8_X], *w = c->tensors[XHAL_LINEAR_FP8_W];
    const DLTensor *xs = c->tensors[XHAL_LINEAR_FP8_X_SCALE], *ws = c->tensors[XHAL_LINEAR_FP8_W_SCALE];
    const DLTensor *bias = c->tensors[XHAL_LINEAR_FP8_BIAS], *out = c->tensors[XHAL_LINEAR_FP8_OUT];
    const ScaledEpilogue<E> epilogue{
        static_cast<const float*>(xs->data),
        static_cast<const float*>(ws->data),
        xs->ndim == 2 ? 1 : 0,
        ws->ndim == 2 ? 1 : 0,
        {bias != nullptr ? static_cast<const T*>(bias->data) : nullptr, bias != nullptr ? bias->strides[0] : 0,
         static_cast<T*>(out->data), out->strides[0]}};
    return launch_tiled_gemm(fp8_operand(x), fp8_operand(w), epilogue, x->shape[0], w->shape[0], x->shape[1], c->stream,
                             "tiled linear_fp8", msg, len);
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<LinearFp8Tiled>(host, XHAL_GPU_BACKEND ".linear_fp8_tiled", XHAL_OP_LINEAR_FP8,
                                         {0, true, nullptr});
}

}  // namespace xhal::gpu

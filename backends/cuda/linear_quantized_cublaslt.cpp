// linear_fp8 and linear_int8 on CUDA through cuBLASLt.
// linear_fp8: its fp8 tensor-core matmul (sm_89 and later) with the codes as stored, the scales as
// cuBLASLt's A/B scales (scalars for per-tensor, outer vectors for per-row), f32 accumulation with
// its periodic promotion (fast accumulation off), the bias in the epilogue. cuBLASLt takes both
// scales in one mode: a per-tensor scale beside a per-row one is first widened to a vector in
// scratch memory.
// linear_int8: its int8 tensor-core matmul (IMMA) writes the exact int32 sums into scratch memory,
// then linear_int8_epilogue applies the scales and bias as the tiled kernel does (the same bits).
#include <cuda_runtime.h>

#include <cstdint>

#include "cublaslt_matmul.hpp"
#include "kernels/gpu/broadcast_scalar.hpp"
#include "kernels/gpu/kernel_registration.hpp"
#include "kernels/gpu/linear_int8_epilogue.hpp"
#include "kernels/gpu/vendor_runtime.hpp"
#include "xhal/fp8.hpp"

namespace xhal::cuda {
namespace {

cudaDataType_t fp8_type(const DLTensor* t) {
  return t->dtype.code == kDLPackFloat8E4M3FN ? CUDA_R_8F_E4M3 : CUDA_R_8F_E5M2;
}

cublasLtMatmulMatrixScale_t scale_mode(const DLTensor* scale) {
  return scale->ndim == 2 ? CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F : CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
}

// cuBLASLt's A is w (its scale per row of out^T, w_scale), B is x (x_scale): linear_matmul.
xhal_status run_linear_fp8(const xhal_op_call* call, char* msg, size_t len) {
  const DLTensor *x = call->tensors[XHAL_LINEAR_FP8_X], *w = call->tensors[XHAL_LINEAR_FP8_W];
  const DLTensor *xs = call->tensors[XHAL_LINEAR_FP8_X_SCALE], *ws = call->tensors[XHAL_LINEAR_FP8_W_SCALE];
  const DLTensor *bias = call->tensors[XHAL_LINEAR_FP8_BIAS], *out = call->tensors[XHAL_LINEAR_FP8_OUT];
  const int64_t M = x->shape[0], N = w->shape[0];
  if (M == 0 || N == 0) return XHAL_OK;
  Matmul mm = linear_matmul(x, w, out->data, blas_leading_dim(out));
  mm.a_type = fp8_type(w), mm.b_type = fp8_type(x);
  mm.a_scale = ws->data, mm.a_scale_mode = scale_mode(ws);
  mm.b_scale = xs->data, mm.b_scale_mode = scale_mode(xs);
  if (bias != nullptr) mm.epilogue = CUBLASLT_EPILOGUE_BIAS, mm.bias = bias->data;
  if (mm.a_scale_mode == mm.b_scale_mode) return run_matmul(call, mm, msg, len);
  // One side per row, the other per tensor: the scalar widened to that side's rows.
  const bool widen_w = mm.a_scale_mode == CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
  const int64_t n = widen_w ? N : M;
  if (cudaSetDevice(call->device) != cudaSuccess) {
    return kernels::kernel_error(msg, len, XHAL_ERR_DEVICE, "cannot make device %d current", int(call->device));
  }
  void* widened = nullptr;
  if (const xhal_status refused = call->host->scratch_alloc(call->host->ctx, call->device, size_t(n) * sizeof(float),
                                                            call->stream, &widened, msg, len);
      refused != XHAL_OK) {
    return refused;
  }
  xhal_status s = gpu::broadcast_scalar(static_cast<const float*>(widen_w ? ws->data : xs->data),
                                        static_cast<float*>(widened), n, call->stream, msg, len);
  if (s == XHAL_OK) {
    (widen_w ? mm.a_scale : mm.b_scale) = widened;
    mm.a_scale_mode = mm.b_scale_mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    s = run_matmul(call, mm, msg, len);
  }
  call->host->scratch_free(call->host->ctx, call->device, widened);  // stream-ordered: after the matmul
  return s;
}

// The device's compute capability as major * 10 + minor (0 when it cannot be read), read once.
int capability(int device) {
  return gpu::device_attribute<cudaDevAttrComputeCapabilityMajor>(device) * 10 +
         gpu::device_attribute<cudaDevAttrComputeCapabilityMinor>(device);
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Both ops' cuBLASLt kernels take 16-byte aligned operands whose rows (K codes, N outputs of
// `out_bytes`) are whole 16-byte units, and K > 0.
const char* supports_layout(const xhal_op_call* call, int64_t out_bytes) {
  const DLTensor *x = call->tensors[XHAL_LINEAR_FP8_X], *w = call->tensors[XHAL_LINEAR_FP8_W];
  const DLTensor* out = call->tensors[XHAL_LINEAR_FP8_OUT];
  const int64_t K = x->shape[1], N = w->shape[0];
  if (K == 0) return "K = 0: out is the bias alone";
  if (K % 16 != 0 || (N * out_bytes) % 16 != 0) return "K and the output rows must be whole 16-byte units";
  for (const DLTensor* t : {x, w, out}) {
    if (!blas_rows_apart(t)) return "rows overlap or run backwards";
    if (!aligned16(t->data) || (t->shape[0] > 1 && (t->strides[0] * (t->dtype.bits / 8)) % 16 != 0)) {
      return "operands must be 16-byte aligned with rows 16 bytes apart";
    }
  }
  return nullptr;
}

// fp8: sm_89 or later, not e5m2 on both sides, and for an f32 output a bf16 bias only (xhal's is
// f32); the bias, when given, in cuBLASLt's epilogue.
const char* supports_fp8(void*, const xhal_op_call* call) {
  const DLTensor *x = call->tensors[XHAL_LINEAR_FP8_X], *w = call->tensors[XHAL_LINEAR_FP8_W];
  const DLTensor* bias = call->tensors[XHAL_LINEAR_FP8_BIAS];
  const int cc = capability(call->device);
  if (cc < 89) return "fp8 tensor cores need sm_89 or later";
  // Per-row scales are cuBLASLt's outer-vector mode, which it runs on Hopper from cuBLAS 12.9 on.
  const bool per_row =
      call->tensors[XHAL_LINEAR_FP8_X_SCALE]->ndim == 2 || call->tensors[XHAL_LINEAR_FP8_W_SCALE]->ndim == 2;
  static const size_t version = cublasLtGetVersion();
  if (per_row && (cc / 10 != 9 || version < 120900)) return "per-row scales need cuBLASLt 12.9+ on sm_90";
  if (fp8_type(x) == CUDA_R_8F_E5M2 && fp8_type(w) == CUDA_R_8F_E5M2) return "e5m2 x e5m2 has no cuBLASLt kernel";
  if (const char* no = supports_layout(call, call->tensors[XHAL_LINEAR_FP8_OUT]->dtype.bits / 8)) return no;
  if (bias != nullptr) {
    if (call->dtype == XHAL_DTYPE_F32) return "an f32 output takes a bf16 bias only";
    if ((bias->shape[0] > 1 && bias->strides[0] != 1) || !aligned16(bias->data)) return "bias must be contiguous";
  }
  return nullptr;
}

// int8: the int32 sums' rows (N of them, 4 bytes each) are what cuBLASLt writes.
const char* supports_int8(void*, const xhal_op_call* call) {
  if (capability(call->device) < 75) return "int8 tensor cores (IMMA) need sm_75 or later";
  return supports_layout(call, sizeof(int32_t));
}

// The sums [M, N] int32 in scratch, then the epilogue pass.
xhal_status run_linear_int8(const xhal_op_call* call, char* msg, size_t len) {
  const DLTensor *x = call->tensors[XHAL_LINEAR_INT8_X], *w = call->tensors[XHAL_LINEAR_INT8_W];
  const int64_t M = x->shape[0], N = w->shape[0];
  if (M == 0 || N == 0) return XHAL_OK;
  size_t bytes = 0;
  if (__builtin_mul_overflow(size_t(M), size_t(N), &bytes) || __builtin_mul_overflow(bytes, sizeof(int32_t), &bytes)) {
    return kernels::kernel_error(msg, len, XHAL_ERR_OUT_OF_MEMORY, "linear_int8: the int32 sums' size overflows");
  }
  void* sums = nullptr;
  if (const xhal_status refused =
          call->host->scratch_alloc(call->host->ctx, call->device, bytes, call->stream, &sums, msg, len);
      refused != XHAL_OK) {
    return refused;
  }
  Matmul mm = linear_matmul(x, w, sums, N);
  mm.a_type = mm.b_type = CUDA_R_8I, mm.d_type = CUDA_R_32I;
  mm.compute = CUBLAS_COMPUTE_32I;
  xhal_status s = run_matmul(call, mm, msg, len);
  if (s == XHAL_OK) s = gpu::linear_int8_epilogue(call, static_cast<const int32_t*>(sums), msg, len);
  call->host->scratch_free(call->host->ctx, call->device, sums);  // stream-ordered: after the epilogue
  return s;
}

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  for (xhal_dtype dtype : {XHAL_DTYPE_F32, XHAL_DTYPE_F16, XHAL_DTYPE_BF16}) {
    kernels::register_kernel(host, "cuda.linear_fp8_cublaslt", XHAL_OP_LINEAR_FP8, dtype,
                             &kernels::guarded<run_linear_fp8>, gpu::accuracy_for(dtype), {10, true, supports_fp8});
    kernels::register_kernel(host, "cuda.linear_int8_cublaslt", XHAL_OP_LINEAR_INT8, dtype,
                             &kernels::guarded<run_linear_int8>, gpu::accuracy_for(dtype), {10, true, supports_int8});
  }
}

}  // namespace xhal::cuda

// linear on CUDA through cuBLASLt, with the bias fused in the epilogue.
#include "cublaslt_matmul.hpp"
#include "kernels/gpu/kernel_registration.hpp"

namespace xhal::cuda {
namespace {

xhal_status run_linear(const xhal_op_call* call, char* msg, size_t len) {
  const DLTensor *x = call->tensors[XHAL_LINEAR_X], *w = call->tensors[XHAL_LINEAR_W];
  const DLTensor *bias = call->tensors[XHAL_LINEAR_BIAS], *out = call->tensors[XHAL_LINEAR_OUT];
  if (x->shape[0] == 0 || w->shape[0] == 0) return XHAL_OK;
  Matmul mm = linear_matmul(x, w, out->data, blas_leading_dim(out));
  if (bias != nullptr) mm.epilogue = CUBLASLT_EPILOGUE_BIAS, mm.bias = bias->data;
  return run_matmul(call, mm, msg, len);
}

// cuBLASLt wants 16-byte aligned operands and leading dimensions for its fast kernels, and needs
// a bias of the output's type with unit stride.
const char* supports(void*, const xhal_op_call* call) {
  const DLTensor* bias = call->tensors[XHAL_LINEAR_BIAS];
  if (bias != nullptr && bias->shape[0] > 1 && bias->strides[0] != 1) return "bias must be contiguous";
  for (int slot : {XHAL_LINEAR_X, XHAL_LINEAR_W, XHAL_LINEAR_OUT}) {
    if (!blas_rows_apart(call->tensors[slot])) return "rows overlap (a leading dimension below the row length)";
  }
  return nullptr;
}

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  for (xhal_dtype dtype : {XHAL_DTYPE_F32, XHAL_DTYPE_F16, XHAL_DTYPE_BF16}) {
    kernels::register_kernel(host, "cuda.linear_cublaslt", XHAL_OP_LINEAR, dtype, &kernels::guarded<run_linear>,
                             gpu::accuracy_for(dtype), {10, true, supports});
  }
}

}  // namespace xhal::cuda

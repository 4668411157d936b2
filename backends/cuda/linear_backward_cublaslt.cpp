// linear_backward on CUDA through cuBLASLt. In cuBLAS's column-major terms (a row-major [r, c]
// tensor is a column-major [c, r] matrix):
//   dx[M,K] = dout · w     is  dxᵀ[K,M] = (w stored [K,N]) · (dout stored [N,M]);
//   dw[N,K] = doutᵀ · x    is  dwᵀ[K,N] = (x stored [K,M]) · (dout stored [N,M], op T);
// and dbias[N], the sum of dout over its M rows, is dw's B operand reduced over k = M: the
// BGRADB epilogue computes it in the dw GEMM. Without dw, or where cuBLASLt has no algorithm with
// that epilogue, dbias comes from column_sums. A contraction of length 0 (N for dx, M for dw) is
// left to the tiled kernel, which writes the zeros.
#include "cublaslt_matmul.hpp"
#include "kernels/gpu/column_sums.hpp"
#include "kernels/gpu/kernel_registration.hpp"

namespace xhal::cuda {
namespace {

xhal_status run_linear_backward(const xhal_op_call* call, char* msg, size_t len) {
  const DLTensor* dout = call->tensors[XHAL_LINEAR_BACKWARD_DOUT];
  const DLTensor *x = call->tensors[XHAL_LINEAR_BACKWARD_X], *w = call->tensors[XHAL_LINEAR_BACKWARD_W];
  const DLTensor *dx = call->tensors[XHAL_LINEAR_BACKWARD_DX], *dw = call->tensors[XHAL_LINEAR_BACKWARD_DW];
  const DLTensor* dbias = call->tensors[XHAL_LINEAR_BACKWARD_DBIAS];
  const int64_t M = dout->shape[0], N = dout->shape[1], K = x->shape[1];
  xhal_status s = XHAL_OK;
  if (dx != nullptr && M > 0 && K > 0) {
    Matmul mm;
    mm.m = K, mm.n = M, mm.k = N;
    mm.a = w->data, mm.lda = blas_leading_dim(w);
    mm.b = dout->data, mm.ldb = blas_leading_dim(dout);
    mm.d = dx->data, mm.ldd = blas_leading_dim(dx);
    s = run_matmul(call, mm, msg, len);
  }
  bool dbias_done = dbias == nullptr;
  if (s == XHAL_OK && dw != nullptr && N > 0 && K > 0) {
    Matmul mm;
    mm.trans_b = CUBLAS_OP_T;
    mm.m = K, mm.n = N, mm.k = M;
    mm.a = x->data, mm.lda = blas_leading_dim(x);
    mm.b = dout->data, mm.ldb = blas_leading_dim(dout);
    mm.d = dw->data, mm.ldd = blas_leading_dim(dw);
    if (!dbias_done && dbias->strides[0] == 1) {
      Matmul with_bias = mm;
      with_bias.epilogue = CUBLASLT_EPILOGUE_BGRADB, with_bias.bias = dbias->data;
      s = run_matmul(call, with_bias, msg, len);
      dbias_done = s == XHAL_OK;
      if (s == XHAL_ERR_UNSUPPORTED) s = run_matmul(call, mm, msg, len);  // dbias on its own below
    } else {
      s = run_matmul(call, mm, msg, len);
    }
  }
  if (s == XHAL_OK && !dbias_done) s = gpu::column_sums(call, dout, dbias, msg, len);
  return s;
}

// An empty contraction would leave a gradient unwritten: the tiled kernel writes its zeros.
const char* supports(void*, const xhal_op_call* call) {
  const DLTensor* dout = call->tensors[XHAL_LINEAR_BACKWARD_DOUT];
  if (call->tensors[XHAL_LINEAR_BACKWARD_DX] != nullptr && dout->shape[1] == 0) return "dx of an empty sum (N = 0)";
  if (call->tensors[XHAL_LINEAR_BACKWARD_DW] != nullptr && dout->shape[0] == 0) return "dw of an empty sum (M = 0)";
  for (int slot : {XHAL_LINEAR_BACKWARD_DOUT, XHAL_LINEAR_BACKWARD_X, XHAL_LINEAR_BACKWARD_W, XHAL_LINEAR_BACKWARD_DX,
                   XHAL_LINEAR_BACKWARD_DW}) {
    const DLTensor* t = call->tensors[slot];
    if (t != nullptr && !blas_rows_apart(t)) return "rows overlap (a leading dimension below the row length)";
  }
  return nullptr;
}

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  for (xhal_dtype dtype : {XHAL_DTYPE_F32, XHAL_DTYPE_F16, XHAL_DTYPE_BF16}) {
    kernels::register_kernel(host, "cuda.linear_backward_cublaslt", XHAL_OP_LINEAR_BACKWARD, dtype,
                             &kernels::guarded<run_linear_backward>, gpu::accuracy_for(dtype), {10, true, supports});
  }
}

}  // namespace xhal::cuda

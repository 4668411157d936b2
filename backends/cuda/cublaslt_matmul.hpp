// One cuBLASLt matmul on a call's device and stream, in cuBLAS's column-major terms:
// D[m,n] = op(A)[m,k] · op(B)[k,n] with an optional epilogue (a bias added to D's rows, or the
// bias gradient reduced from B over k), f32 accumulation (int32 for int8 operands), the call's
// dtype for every matrix unless A's, B's or D's is given (fp8, int8 in, int32 out), and optional
// f32 scales of A and B (a scalar each, or an outer vector of m and n elements multiplying D's rows
// and columns). The handle per device, the descriptors and the heuristic's choice per problem (built
// once per thread) and the workspace (the call's scratch allocator) are handled here, for every
// op that multiplies through cuBLASLt.
#pragma once

#include <cublasLt.h>

#include <cstddef>
#include <cstdint>

#include "kernels/blas_layout.hpp"

#include "xhal/plugin.h"

namespace xhal::cuda {

struct Matmul {
  cublasOperation_t trans_a = CUBLAS_OP_N, trans_b = CUBLAS_OP_N;
  int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;
  int64_t lda = 0;  // of A as stored (rows of the stored column-major matrix)
  const void* b = nullptr;
  int64_t ldb = 0;
  void* d = nullptr;
  int64_t ldd = 0;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  void* bias = nullptr;  // BIAS: read, m elements; BGRADB: written, n elements
  // Element types of A, B and D when not the call's dtype (kCallType).
  static constexpr cudaDataType_t kCallType = cudaDataType_t(-1);
  cudaDataType_t a_type = kCallType, b_type = kCallType, d_type = kCallType;
  // CUBLAS_COMPUTE_32I: exact int32 sums of int8 products (alpha 1 and beta 0 then int32 too).
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  // Scales of A and B (device pointers to f32; null: none) and what each holds.
  const void *a_scale = nullptr, *b_scale = nullptr;
  cublasLtMatmulMatrixScale_t a_scale_mode = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
  cublasLtMatmulMatrixScale_t b_scale_mode = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
};

// Runs `mm`; XHAL_ERR_UNSUPPORTED (with the reason in msg) when cuBLASLt has no algorithm for it,
// so that a caller can retry without the epilogue.
xhal_status run_matmul(const xhal_op_call* call, const Matmul& mm, char* msg, size_t len);

using kernels::blas_leading_dim;
using kernels::blas_rows_apart;

// A linear's product in cuBLAS's terms: row-major out[M,N] = x[M,K] w[N,K]^T is column-major
// out^T[N,M] = (w stored [K,N], op T) x^T, so A is w and B is x; out is written at `out` with
// rows `ldo` elements apart.
inline Matmul linear_matmul(const DLTensor* x, const DLTensor* w, void* out, int64_t ldo) {
  Matmul mm;
  mm.trans_a = CUBLAS_OP_T;
  mm.m = w->shape[0], mm.n = x->shape[0], mm.k = x->shape[1];
  mm.a = w->data, mm.lda = blas_leading_dim(w);
  mm.b = x->data, mm.ldb = blas_leading_dim(x);
  mm.d = out, mm.ldd = ldo;
  return mm;
}

}  // namespace xhal::cuda

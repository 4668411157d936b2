// One cuBLASLt matmul on a call's device and stream, in cuBLAS's column-major terms:
// D[m,n] = op(A)[m,k] · op(B)[k,n] with an optional epilogue (a bias added to D's rows, or the
// bias gradient reduced from B over k), f32 accumulation, the call's dtype for every matrix. The
// handle per device, the heuristic's choice per problem (cached) and the workspace (the call's
// scratch allocator) are handled here, for linear and linear_backward alike.
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
};

// Runs `mm`; XHAL_ERR_UNSUPPORTED (with the reason in msg) when cuBLASLt has no algorithm for it,
// so that a caller can retry without the epilogue.
xhal_status run_matmul(const xhal_op_call* call, const Matmul& mm, char* msg, size_t len);

using kernels::blas_leading_dim;
using kernels::blas_rows_apart;

}  // namespace xhal::cuda

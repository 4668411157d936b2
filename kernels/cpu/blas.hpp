// The BLAS behind the CPU's linear and attention (OpenBLAS, its OpenMP build, so that a call made
// inside one of the kernels' parallel regions runs on the calling thread). Row-major f32.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/blas_layout.hpp"

namespace xhal::cpu {

// "OpenBLAS 0.3.21 (Haswell kernels, OpenMP)", or why there is none.
std::string blas_summary();

// A warning when OpenBLAS runs kernels far older than this CPU ("" when not): it picks them by CPU
// model when it loads, and a model newer than its release gets its oldest x86-64 kernels
// (Prescott, SSE3): on a 16-core AVX-512 Xeon, 0.2 TFLOP/s against 1.1 with OPENBLAS_CORETYPE set.
std::string blas_kernels_warning();

using kernels::blas_leading_dim;
using kernels::blas_rows_apart;

#if defined(XHAL_HAVE_BLAS)
// c[M,N] = a[M,K] · b[N,K]ᵀ, plus c when `accumulate`.
void gemm_nt(int64_t M, int64_t N, int64_t K, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
             int64_t ldc, bool accumulate);
// c[M,N] = a[M,K] · b[K,N], plus c when `accumulate`.
void gemm_nn(int64_t M, int64_t N, int64_t K, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
             int64_t ldc, bool accumulate);
// c[M,N] = a[K,M]ᵀ · b[K,N], plus c when `accumulate`.
void gemm_tn(int64_t M, int64_t N, int64_t K, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
             int64_t ldc, bool accumulate);
#endif

}  // namespace xhal::cpu

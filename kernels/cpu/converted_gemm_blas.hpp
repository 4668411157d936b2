// out = x · wᵀ through OpenBLAS's sgemm for operands of any storage converted to f32: x once, w a
// panel of kPanel rows at a time (so scratch stays bounded), each panel multiplied into an f32
// block handed to the store. One extra pass over x, w and out against 2·M·N·K flops of BLAS work.
// The operands object is converted_gemm's (converted_gemm.hpp); its loaders and store run inside
// OpenMP regions and must not throw.
#pragma once

#include <algorithm>

#include "blas.hpp"
#include "scratch.hpp"

namespace xhal::cpu {

template <class Operands>
xhal_status converted_gemm_blas(const xhal_op_call* c, const Operands& op, const char* name, char* msg, size_t len) {
  constexpr int64_t kPanel = 1024;
  const int64_t M = op.M(), N = op.N(), K = op.K();
  if (M == 0 || N == 0) return XHAL_OK;
  const int64_t panel = std::min(kPanel, N);
  Scratch xf(c, matrix_bytes(M, K));
  Scratch wf(c, matrix_bytes(panel, K));
  Scratch of(c, matrix_bytes(M, panel));
  if (xf.get() == nullptr || wf.get() == nullptr || of.get() == nullptr) {
    return kernels::kernel_error(msg, len, XHAL_ERR_OUT_OF_MEMORY, "%s: no memory for the f32 copies of x and w", name);
  }
#pragma omp parallel for schedule(static)
  for (int64_t m = 0; m < M; ++m) op.load_x(m, xf.get() + m * K);
  for (int64_t n0 = 0; n0 < N; n0 += panel) {
    const int64_t nb = std::min(panel, N - n0);
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < nb; ++n) op.load_w(n0 + n, wf.get() + n * K);
    gemm_nt(M, nb, K, xf.get(), K, wf.get(), K, of.get(), nb, false);
#pragma omp parallel for schedule(static)
    for (int64_t m = 0; m < M; ++m) op.store(m, n0, of.get() + m * nb, nb);
  }
  return XHAL_OK;
}

}  // namespace xhal::cpu

// out = x · wᵀ for operands of any storage (f16, bf16, fp8 codes ...) converted to f32 row by row,
// without a BLAS: tiles of kRowTile x kColTile outputs, each thread converting its tile's rows of x
// and w (the conversion is 1/kColTile of the arithmetic). The operands object `op` has
//   M(), N(), K(): the shape;
//   load_x(m, float* row) and load_w(n, float* row): write row m of x (n of w), K floats;
//   store(m, n0, const float* sums, count): out[m, n0 .. n0 + count) from their f32 dot products.
// Loaders and the store run inside an OpenMP region and must not throw.
#pragma once

#include <algorithm>
#include <utility>

#include "scratch.hpp"

namespace xhal::cpu {

template <class Operands>
xhal_status converted_gemm(const xhal_op_call* c, const Operands& op, const char* name, char* msg, size_t len) {
  constexpr int64_t kRowTile = 16, kColTile = 64;
  const int64_t M = op.M(), N = op.N(), K = op.K();
  const int64_t row_tiles = (M + kRowTile - 1) / kRowTile, col_tiles = (N + kColTile - 1) / kColTile;
  const auto tiles = [&](Carver& carver) {
    return std::pair{carver.take<float>(kRowTile, K), carver.take<float>(kColTile, K)};
  };
  Carver size;
  tiles(size);
  const ThreadWorkspaces workspaces(c, size.bytes(), row_tiles * col_tiles);
  if (!workspaces.ok()) return workspaces_refused(msg, len, name, workspaces.bytes_each());
#pragma omp parallel for collapse(2) schedule(dynamic) num_threads(workspaces.threads())
  for (int64_t ct = 0; ct < col_tiles; ++ct) {
    for (int64_t rt = 0; rt < row_tiles; ++rt) {
      Carver carver(workspaces.of_this_thread());
      const auto [xf, wf] = tiles(carver);
      const int64_t m0 = rt * kRowTile, mn = std::min(kRowTile, M - m0);
      const int64_t n0 = ct * kColTile, nn = std::min(kColTile, N - n0);
      for (int64_t i = 0; i < mn; ++i) op.load_x(m0 + i, xf + i * K);
      for (int64_t j = 0; j < nn; ++j) op.load_w(n0 + j, wf + j * K);
      for (int64_t i = 0; i < mn; ++i) {
        const float* xr = xf + i * K;
        float sums[kColTile];
        for (int64_t j = 0; j < nn; ++j) {
          const float* wr = wf + j * K;
          float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
          for (int64_t kk = 0; kk < K; ++kk) dot += xr[kk] * wr[kk];
          sums[j] = dot;
        }
        op.store(m0 + i, n0, sums, nn);
      }
    }
  }
  return XHAL_OK;
}

}  // namespace xhal::cpu

// linear on the CPU: out = x @ w^T + bias, in tiles of kRowTile x kColTile outputs converted to f32
// per tile (the conversion is 1/kColTile of the arithmetic). The reference: linear_blas.cpp and
// linear_simd.cpp (a few rows of x) are registered above it.
#include <algorithm>
#include <utility>

#include "element.hpp"
#include "kernel_registration.hpp"
#include "scratch.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {
namespace {

constexpr int64_t kRowTile = 16;
constexpr int64_t kColTile = 64;

template <class E>
struct LinearKernel {
  using S = typename E::Storage;
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    const TensorRef<const S> x(c->tensors[XHAL_LINEAR_X]), w(c->tensors[XHAL_LINEAR_W]);
    const TensorRef<const S> bias(c->tensors[XHAL_LINEAR_BIAS]);
    const TensorRef<S> out(c->tensors[XHAL_LINEAR_OUT]);
    const int64_t M = x.size(0), K = x.size(1), N = w.size(0);
    const int64_t row_tiles = (M + kRowTile - 1) / kRowTile, col_tiles = (N + kColTile - 1) / kColTile;
    // Each thread's f32 copies of a tile of x rows and one of w rows.
    const auto tiles = [&](Carver& carver) {
      return std::pair{carver.take<float>(kRowTile, K), carver.take<float>(kColTile, K)};
    };
    Carver size;
    tiles(size);
    const ThreadWorkspaces workspaces(c, size.bytes(), row_tiles * col_tiles);
    if (!workspaces.ok()) {
      return workspaces_refused(msg, len, "linear", workspaces.bytes_each());
    }
#pragma omp parallel for collapse(2) schedule(dynamic) num_threads(workspaces.threads())
    for (int64_t ct = 0; ct < col_tiles; ++ct) {
      for (int64_t rt = 0; rt < row_tiles; ++rt) {
        Carver carver(workspaces.of_this_thread());
        const auto [xf, wf] = tiles(carver);
        const int64_t m0 = rt * kRowTile, mn = std::min(kRowTile, M - m0);
        const int64_t n0 = ct * kColTile, nn = std::min(kColTile, N - n0);
        for (int64_t i = 0; i < mn; ++i) load_row<E>(x.at(m0 + i, 0), xf + i * K, K);
        for (int64_t j = 0; j < nn; ++j) load_row<E>(w.at(n0 + j, 0), wf + j * K, K);
        for (int64_t i = 0; i < mn; ++i) {
          const float* xr = xf + i * K;
          S* orow = out.at(m0 + i, 0);
          for (int64_t j = 0; j < nn; ++j) {
            const float* wr = wf + j * K;
            float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
            for (int64_t kk = 0; kk < K; ++kk) dot += xr[kk] * wr[kk];
            if (bias) dot += E::load(*bias.at(n0 + j));
            orow[(n0 + j) * out.stride(1)] = E::store(dot);
          }
        }
      }
    }
    return XHAL_OK;
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) { register_float_kernels<LinearKernel>(host, "cpu.linear", XHAL_OP_LINEAR); }

}  // namespace xhal::cpu

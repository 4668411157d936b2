// linear for a few rows of x (decode: M <= kMaxRows) with SIMD (Highway, best target picked at run
// time), straight from the weights as stored. Such a call is a read of w and little arithmetic
// per weight, so it must read w once and nothing else: the BLAS path converts 16-bit weights to
// f32 first (two more passes over them) and OpenBLAS's sgemm packs even f32 ones. Threads take
// contiguous ranges of w's rows; each block of kSumBlock / R rows is multiplied by x's rows R at a
// time (simd_dot-inl.h: bf16 by vdpbf16ps as stored on CPUs with AVX512_BF16, else widened in
// registers), the block staying in L1 while x's rows pass. Registered above the BLAS and reference
// kernels; larger M goes to the BLAS.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/linear_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <vector>

#include "kernels/cpu/kernel_registration.hpp"
#include "kernels/cpu/simd_dot-inl.h"
#include "kernels/cpu/tensor_ref.hpp"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {

template <class E, int R>
void linear_rows_typed(const xhal_op_call* c) {
  using S = typename E::Storage;
  constexpr int64_t J = kSumBlock / R;  // rows of w per block
  const TensorRef<const S> x(c->tensors[XHAL_LINEAR_X]), w(c->tensors[XHAL_LINEAR_W]),
      bias(c->tensors[XHAL_LINEAR_BIAS]);
  const TensorRef<S> out(c->tensors[XHAL_LINEAR_OUT]);
  const int64_t M = x.size(0), K = x.size(1), N = w.size(0);
  // x's rows prepared for the dot products, rounded up to a multiple of R with zero rows.
  const int64_t rows = (M + R - 1) / R * R;
  thread_local std::vector<DotElement<E>> prepared;  // keeps its memory from call to call
  prepared.resize(size_t(rows * K));
  for (int64_t m = 0; m < M; ++m) prepare_dot_row<E>(x.at(m, 0), K, prepared.data() + m * K);
  std::fill(prepared.begin() + M * K, prepared.end(), DotElement<E>{});
  const DotElement<E>* xq = prepared.data();
  const int64_t blocks = (N + J - 1) / J;
#pragma omp parallel for schedule(static)
  for (int64_t block = 0; block < blocks; ++block) {
    const int64_t n0 = block * J, nn = std::min(J, N - n0);
    const S* wrows[J];  // past N: the block's last row again, its sums dropped
    for (int64_t j = 0; j < J; ++j) wrows[j] = w.at(n0 + std::min(j, nn - 1), 0);
    float bias_of[J];
    for (int64_t j = 0; j < nn; ++j) bias_of[j] = bias ? E::load(*bias.at(n0 + j)) : 0.0f;
    alignas(64) float sums[kSumBlock];
    for (int64_t r0 = 0; r0 < M; r0 += R) {
      dot_block<E, R>(xq + r0 * K, wrows, K, sums);
      for (int64_t r = 0; r < R && r0 + r < M; ++r) {
        for (int64_t j = 0; j < nn; ++j) *out.at(r0 + r, n0 + j) = E::store(sums[r * J + j] + bias_of[j]);
      }
    }
  }
}

// R, the rows of x per block, from M.
void linear_rows(const xhal_op_call* c) {
  const int64_t M = c->tensors[XHAL_LINEAR_X]->shape[0];
  with_element(c->dtype, [&]<class E>() { with_rows_per_block(M, [&]<int R>() { linear_rows_typed<E, R>(c); }); });
}

}  // namespace xhal::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace xhal::cpu {

HWY_EXPORT(linear_rows);

namespace {

constexpr int64_t kMaxRows = 16;  // rows of x up to which this kernel takes the call

// A few rows, each of x and w contiguous (the dot products read them as vectors).
const char* few_rows_supported(void*, const xhal_op_call* c) {
  const DLTensor *x = c->tensors[XHAL_LINEAR_X], *w = c->tensors[XHAL_LINEAR_W];
  if (x->shape[0] > kMaxRows) return "more than 16 rows of x: the BLAS path";
  if (x->shape[1] > 1 && (x->strides[1] != 1 || w->strides[1] != 1)) return "rows of x or w not contiguous";
  return nullptr;
}

template <class E>
struct LinearRowsSimd {
  static xhal_status run(const xhal_op_call* c, char*, size_t) {
    if (c->tensors[XHAL_LINEAR_X]->shape[0] * c->tensors[XHAL_LINEAR_W]->shape[0] == 0) return XHAL_OK;
    HWY_DYNAMIC_DISPATCH(linear_rows)(c);
    return XHAL_OK;
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_fast_kernels<LinearRowsSimd>(host, "cpu.linear_few_rows_simd", XHAL_OP_LINEAR, few_rows_supported,
                                        kNarrowFastPriority);
}

}  // namespace xhal::cpu
#endif

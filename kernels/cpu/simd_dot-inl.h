// Per-target (Highway) dot products of a few rows against many, straight from the stored elements:
// paged decode's q·k and linear's x·w for a few rows of x. The few rows are prepared once (bf16 as
// stored for vdpbf16ps, else f32 in load2_f32's order); the many are read as stored and widened
// in registers when they must be. Toggling include guard: included inside the per-target
// compilation of the *_simd.cpp files.
#if defined(XHAL_CPU_SIMD_DOT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef XHAL_CPU_SIMD_DOT_INL_H_
#undef XHAL_CPU_SIMD_DOT_INL_H_
#else
#define XHAL_CPU_SIMD_DOT_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/cpu/simd_element-inl.h"
#include "kernels/cpu/simd_math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {

// Elements of the few rows as the dot products read them: bf16 as stored for vdpbf16ps, else f32.
template <class E>
using DotElement = std::conditional_t<kBf16Dot<E>, typename E::Storage, float>;

template <class E>
HWY_INLINE float dot_value(DotElement<E> x) {
  if constexpr (kBf16Dot<E>) {
    return E::load(x);
  } else {
    return x;
  }
}

// One of the few rows (n elements of E) into dst: as stored (kBf16Dot), else f32 with whole chunks
// of 2 * lanes in load2_f32's order (the order the many rows are widened in) and the rest in place.
template <class E>
void prepare_dot_row(const typename E::Storage* src, int64_t n, DotElement<E>* dst) {
  if constexpr (kBf16Dot<E>) {
    std::copy(src, src + n, dst);
  } else {
    const DF df;
    const int64_t lanes = int64_t(hn::Lanes(df));
    int64_t d = 0;
    for (; d + 2 * lanes <= n; d += 2 * lanes) {
      VF a, b;
      load2_f32<E>(src + d, a, b);
      hn::StoreU(a, df, dst + d), hn::StoreU(b, df, dst + d + lanes);
    }
    for (; d < n; ++d) dst[d] = E::load(src[d]);
  }
}

// kSumBlock dot products of length D: R prepared rows (q, D apart) x kSumBlock / R stored rows
// (k): sums[r * K + j]. The sums stay in registers over whole chunks of the rows and are reduced
// together.
template <class E, int R>
HWY_INLINE void dot_block(const DotElement<E>* q, const typename E::Storage* const* k, int64_t D, float* sums) {
  constexpr int K = kSumBlock / R;
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df)), full = D / (2 * lanes) * (2 * lanes);
  VF acc[kSumBlock];
  for (VF& a : acc) a = hn::Zero(df);
  for (int64_t d = 0; d < full; d += 2 * lanes) {
    if constexpr (kBf16Dot<E>) {
#ifdef XHAL_CPU_AVX512  // kBf16Dot holds only there
      const hn::ScalableTag<uint16_t> du16;
      hn::Vec<decltype(du16)> kv[K];
      for (int j = 0; j < K; ++j) kv[j] = hn::LoadU(du16, k[j] + d);
      for (int r = 0; r < R; ++r) {
        const auto qv = hn::LoadU(du16, q + r * D + d);
        for (int j = 0; j < K; ++j) dot_bf16(acc[r * K + j], qv, kv[j]);
      }
#endif
    } else {
      for (int j = 0; j < K; ++j) {
        VF ka, kb;
        load2_f32<E>(k[j] + d, ka, kb);
        for (int r = 0; r < R; ++r) {
          acc[r * K + j] = hn::MulAdd(hn::LoadU(df, q + r * D + d), ka, acc[r * K + j]);
          acc[r * K + j] = hn::MulAdd(hn::LoadU(df, q + r * D + d + lanes), kb, acc[r * K + j]);
        }
      }
    }
  }
  sum_lanes_of_block(acc, sums);
  for (int64_t d = full; d < D; ++d) {
    for (int r = 0; r < R; ++r) {
      for (int j = 0; j < K; ++j) sums[r * K + j] += dot_value<E>(q[r * D + d]) * E::load(k[j][d]);
    }
  }
}

// Calls f.template operator()<R>() with R, the prepared rows per dot_block, for `rows` prepared
// rows: all of them up to 4 (3 padded to 4), so each block has kSumBlock / R stored rows.
template <class F>
HWY_INLINE void with_rows_per_block(int64_t rows, F&& f) {
  if (rows >= 3) return f.template operator()<4>();
  if (rows == 2) return f.template operator()<2>();
  f.template operator()<1>();
}

}  // namespace xhal::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif

// Per-target (Highway) online softmax over one row of a score tile, shared by the CPU's blocked
// attention kernels (attention_blas.cpp: P in f32 for sgemm; attention_amx.cpp: P in bf16 for
// AMX). Toggling include guard: included inside their per-target compilation.
#if defined(XHAL_CPU_ATTENTION_SOFTMAX_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef XHAL_CPU_ATTENTION_SOFTMAX_INL_H_
#undef XHAL_CPU_ATTENTION_SOFTMAX_INL_H_
#else
#define XHAL_CPU_ATTENTION_SOFTMAX_INL_H_
#endif

#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/cpu/attention_core.hpp"
#include "kernels/cpu/simd_element-inl.h"
#include "kernels/cpu/simd_math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {

inline constexpr float kLog2e = 1.44269504088896341f, kLn2 = 0.693147180559945309f;

// One row of scores s over a tile's keys, of which [a, b) are visible; the row of P is written
// to p[0, width) as E (0 outside [a, b)), p = 2^(x - m_new), where x = pre * s in base 2 (the
// caller's scale and log2(e) that it did not fold into q), or cap·tanh(pre * s / cap) · log2(e)
// with a softcap. Updates the row's running max m and sum l, and rescales its accumulator row
// when the max moved. s is overwritten where a softcap or pre <= 0 changes it; p may alias s (f32).
// 2^x by a polynomial of degree 5 for f32 P, 3 for bf16 P (relative error 1e-4, under bf16's
// rounding of p); four vectors at a time, so that their dependent chains overlap.
template <class E>
void softmax_row(float* s, typename E::Storage* p, int64_t width, int64_t a, int64_t b, float pre, float softcap,
                 float* m, float* l, float* acc, int64_t Dv) {
  constexpr int kDegree = E::kDType == XHAL_DTYPE_F32 ? 5 : 3, kN = 4;
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df));
  if (softcap > 0.0f || !(pre > 0.0f)) {  // to base-2 scores in s, then pre = 1
    for (int64_t j = a; j < b; ++j) {
      s[j] = softcap > 0.0f ? softcap * std::tanh(pre * s[j] / softcap) * kLog2e : pre * s[j];
    }
    pre = 1.0f;
  }
  // pre > 0 from here: the max of pre * s is pre times the max of s.
  VF vmax[kN];
  for (auto& v : vmax) v = hn::Set(df, -std::numeric_limits<float>::infinity());
  int64_t j = a;
  for (; j + kN * lanes <= b; j += kN * lanes) {
    for (int k = 0; k < kN; ++k) vmax[k] = hn::Max(vmax[k], hn::LoadU(df, s + j + k * lanes));
  }
  for (; j + lanes <= b; j += lanes) vmax[0] = hn::Max(vmax[0], hn::LoadU(df, s + j));
  for (int k = 1; k < kN; ++k) vmax[0] = hn::Max(vmax[0], vmax[k]);
  float raw_max = hn::GetLane(hn::MaxOfLanes(df, vmax[0]));
  for (; j < b; ++j) raw_max = std::max(raw_max, s[j]);
  const float m_new = std::max(*m, pre * raw_max);
  const float correction = std::exp2(*m - m_new);  // 0 on the first visible tile (m = -inf)
  // 2^(pre * (s - m_new / pre)); no lower clamp where vscalefps forms 2^n (AVX-512), else at -126.
  const float shift = m_new / pre;
  const auto sv = hn::Set(df, shift), pv = hn::Set(df, pre);
#ifndef XHAL_CPU_AVX512
  const auto floor = hn::Set(df, -126.0f / pre);
#endif
  VF vsum[kN];
  for (auto& v : vsum) v = hn::Zero(df);
  const auto exp_block = [&](int64_t at, auto count) {
    constexpr int kCount = decltype(count)::value;
    VF x[kCount], e[kCount];
    for (int k = 0; k < kCount; ++k) {
      x[k] = hn::Sub(hn::LoadU(df, s + at + k * lanes), sv);
#ifndef XHAL_CPU_AVX512
      x[k] = hn::Max(floor, x[k]);  // NaN second: x86's max returns it, so a NaN score stays NaN
#endif
    }
    exp2_of_products<kDegree>(e, x, pv);
    for (int k = 0; k < kCount; ++k) {
      store_f32<E>(e[k], p + at + k * lanes);
      vsum[k] = hn::Add(vsum[k], e[k]);
    }
  };
  j = a;
  for (; j + kN * lanes <= b; j += kN * lanes) exp_block(j, std::integral_constant<int, kN>());
  for (; j + lanes <= b; j += lanes) exp_block(j, std::integral_constant<int, 1>());
  for (int k = 1; k < kN; ++k) vsum[0] = hn::Add(vsum[0], vsum[k]);
  float sum = hn::GetLane(hn::SumOfLanes(df, vsum[0]));
  for (; j < b; ++j) {
    const float e = std::exp2(pre * (s[j] - shift));
    p[j] = E::store(e);
    sum += e;
  }
  std::fill(p, p + a, E::store(0.0f));
  std::fill(p + b, p + width, E::store(0.0f));
  *l = *l * correction + sum;
  *m = m_new;
  if (correction != 1.0f) {
    const auto cv = hn::Set(df, correction);
    int64_t d = 0;
    for (; d + lanes <= Dv; d += lanes) hn::StoreU(hn::Mul(hn::LoadU(df, acc + d), cv), df, acc + d);
    for (; d < Dv; ++d) acc[d] *= correction;
  }
}

// softmax_row for rows [0, n) of a task's score tile, the tile holding keys [j0, j0 + jn): row r is
// query i0 + r % rows of its head and sees the keys its mask allows; a row that sees none of the
// tile gets P = 0 over [0, width). Rows of s and p are `stride` elements apart, of acc acc_stride.
// Returns whether the mask hid any of the tile's keys from any row (P has zeros that P V must not
// multiply by a non-finite V: pv_of_visible_keys).
template <class E>
bool softmax_rows(const MaskParams& mask, int64_t i0, int64_t rows, int64_t n, int64_t Sq, int64_t Sk, int64_t j0,
                  int64_t jn, int64_t width, float* s, typename E::Storage* p, int64_t stride, float pre, float* m,
                  float* l, float* acc, int64_t acc_stride, int64_t Dv) {
  bool masked = false;
  for (int64_t r = 0; r < n; ++r) {
    int64_t lo, hi;
    mask.visible_range(i0 + r % rows, Sq, Sk, &lo, &hi);
    const int64_t a = std::clamp(lo - j0, int64_t(0), jn), b = std::clamp(hi - j0, int64_t(0), jn);
    masked |= a != 0 || b != jn;
    typename E::Storage* p_row = p + r * stride;
    if (a >= b) {
      std::fill(p_row, p_row + width, E::store(0.0f));
      continue;
    }
    softmax_row<E>(s + r * stride, p_row, width, a, b, pre, mask.softcap, m + r, l + r, acc + r * acc_stride, Dv);
  }
  return masked;
}

// Whether any of the tile's jn V rows (v(j) the row of its key j, as VE) holds an infinity or NaN:
// all exponent bits set, tested on the raw bits (a loop the compiler vectorizes; it runs on every
// tile the mask cuts, the diagonal ones of a causal call).
template <class VE, class VRow>
bool any_non_finite(VRow v, int64_t jn, int64_t Dv) {
  using Bits = std::conditional_t<sizeof(typename VE::Storage) == 4, uint32_t, uint16_t>;
  constexpr Bits kExponent = VE::kDType == XHAL_DTYPE_F32   ? Bits(0x7F800000u)
                             : VE::kDType == XHAL_DTYPE_F16 ? Bits(0x7C00u)
                                                            : Bits(0x7F80u);
  for (int64_t j = 0; j < jn; ++j) {
    const typename VE::Storage* row = v(j);
    Bits hit = 0;
    for (int64_t d = 0; d < Dv; ++d) {
      Bits bits;
      std::memcpy(&bits, row + d, sizeof bits);
      hit |= Bits((bits & kExponent) == kExponent);
    }
    if (hit != 0) return true;
  }
  return false;
}

// acc += P V over each row's visible keys only, for a tile where the mask hid keys from some rows
// and V is not finite: the matrix product would give those rows 0 * inf = NaN. P as PE (its rows
// `stride` apart), V rows v(j) as VE; rows as in softmax_rows. Exact, and slow: it runs only then.
template <class PE, class VE, class VRow>
void pv_of_visible_keys(const MaskParams& mask, int64_t i0, int64_t rows, int64_t n, int64_t Sq, int64_t Sk, int64_t j0,
                        int64_t jn, const typename PE::Storage* p, int64_t stride, VRow v, int64_t Dv, float* acc,
                        int64_t acc_stride) {
  for (int64_t r = 0; r < n; ++r) {
    int64_t lo, hi;
    mask.visible_range(i0 + r % rows, Sq, Sk, &lo, &hi);
    const int64_t a = std::clamp(lo - j0, int64_t(0), jn), b = std::clamp(hi - j0, int64_t(0), jn);
    float* acc_row = acc + r * acc_stride;
    for (int64_t j = a; j < b; ++j) {
      const float pj = PE::load(p[r * stride + j]);
      const typename VE::Storage* row = v(j);
      for (int64_t d = 0; d < Dv; ++d) acc_row[d] += pj * VE::load(row[d]);
    }
  }
}

// A finished row: out = acc / l as E, and lse (when asked for) in natural log; a row that saw no
// key gets 0 and lse = -inf; a NaN row NaN in both.
template <class E>
void finish_row(const float* acc, float l, float m, int64_t Dv, typename E::Storage* out, float* lse) {
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df));
  // l == 0: the row saw no key. A NaN l (a NaN query or score) is not that: it reaches out and lse.
  const float inv = l == 0.0f ? 0.0f : 1.0f / l;
  const auto vinv = hn::Set(df, inv);
  int64_t d = 0;
  for (; d + lanes <= Dv; d += lanes) store_f32<E>(hn::Mul(hn::LoadU(df, acc + d), vinv), out + d);
  for (; d < Dv; ++d) out[d] = E::store(acc[d] * inv);
  if (lse != nullptr) *lse = l == 0.0f ? -std::numeric_limits<float>::infinity() : m * kLn2 + std::log(l);
}

}  // namespace xhal::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // XHAL_CPU_ATTENTION_SOFTMAX_INL_H_

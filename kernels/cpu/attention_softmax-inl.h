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
#include <limits>

#include "kernels/cpu/simd_element-inl.h"
#include "kernels/cpu/simd_math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {

inline constexpr float kLog2e = 1.44269504088896341f, kLn2 = 0.693147180559945309f;

// One row of scores s over a tile's keys, of which [a, b) are visible; the row of P is written
// to p[0, width) as E (0 outside [a, b)), p = 2^(x - m_new), where x = pre * s in base 2 (the
// caller's scale and log2(e) that it did not fold into q), or cap·tanh(pre * s / cap) · log2(e)
// with a softcap. Updates the row's running max m and sum l, and rescales its accumulator row
// when the max moved. s is overwritten where pre or the softcap change it; p may alias s (f32).
template <class E>
void softmax_row(float* s, typename E::Storage* p, int64_t width, int64_t a, int64_t b, float pre, float softcap,
                 float* m, float* l, float* acc, int64_t Dv) {
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df));
  if (softcap > 0.0f) {
    for (int64_t j = a; j < b; ++j) s[j] = softcap * std::tanh(pre * s[j] / softcap) * kLog2e;
  } else if (pre != 1.0f) {
    const auto pv = hn::Set(df, pre);
    int64_t j = a;
    for (; j + lanes <= b; j += lanes) hn::StoreU(hn::Mul(hn::LoadU(df, s + j), pv), df, s + j);
    for (; j < b; ++j) s[j] *= pre;
  }
  auto vmax = hn::Set(df, -std::numeric_limits<float>::infinity());
  int64_t j = a;
  for (; j + lanes <= b; j += lanes) vmax = hn::Max(vmax, hn::LoadU(df, s + j));
  float tile_max = hn::GetLane(hn::MaxOfLanes(df, vmax));
  for (; j < b; ++j) tile_max = std::max(tile_max, s[j]);
  const float m_new = std::max(*m, tile_max);
  const float correction = std::exp2(*m - m_new);  // 0 on the first visible tile (m = -inf)
  const auto mv = hn::Set(df, m_new), floor = hn::Set(df, -126.0f);
  auto vsum = hn::Zero(df);
  j = a;
  for (; j + lanes <= b; j += lanes) {
    const auto e = exp2_on_range<5>(hn::Max(hn::Sub(hn::LoadU(df, s + j), mv), floor));
    store_f32<E>(e, p + j);
    vsum = hn::Add(vsum, e);
  }
  float sum = hn::GetLane(hn::SumOfLanes(df, vsum));
  for (; j < b; ++j) {
    const float e = std::exp2(s[j] - m_new);
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

}  // namespace xhal::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // XHAL_CPU_ATTENTION_SOFTMAX_INL_H_

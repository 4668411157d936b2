// Per-target (Highway) row functions of cross_entropy and softmax: a row's lse and the
// exponentials taken from it, with simd_math-inl.h's 2^f (degree 5 for f32, 4 for f16, 3 for
// bf16). A row's lse takes two passes (its max, then the sum of exp(x - max) with the exponent
// clamped at -87, below which e^x is under 2e-38); a row holding a NaN or +inf, or whose entries
// are all masked, goes to row_lse.hpp's scalar function, which gives those their NaN or -inf.
// Toggling include guard: included inside the per-target compilation of the *_simd.cpp files.
#if defined(XHAL_CPU_ROW_LSE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef XHAL_CPU_ROW_LSE_INL_H_
#undef XHAL_CPU_ROW_LSE_INL_H_
#else
#define XHAL_CPU_ROW_LSE_INL_H_
#endif

#include <hwy/highway.h>

#include <cmath>

#include "kernels/cpu/row_lse.hpp"
#include "kernels/cpu/simd_element-inl.h"
#include "kernels/cpu/simd_math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {

template <class E>
constexpr int exp_degree() {
  return E::kDType == XHAL_DTYPE_F32 ? 5 : E::kDType == XHAL_DTYPE_F16 ? 4 : 3;
}

// d[j] = scale * exp(x[j] - shift) - floor for the row's whole vectors; returns where they end.
template <class E, class Out>
int64_t exp_vectors(const typename E::Storage* x, int64_t V, float shift, Out out) {
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df));
  const auto lo = hn::Set(df, -87.0f), log2e = hn::Set(df, 1.44269504088896341f), s = hn::Set(df, shift);
  int64_t j = 0;
  for (; j + 2 * lanes <= V; j += 2 * lanes) {
    VF a[2], e[2];
    a[0] = load_f32<E>(x + j), a[1] = load_f32<E>(x + j + lanes);
    for (int k = 0; k < 2; ++k) a[k] = hn::Max(hn::Sub(a[k], s), lo);
    exp2_of_products<exp_degree<E>()>(e, a, log2e);
    out(j, e[0]), out(j + lanes, e[1]);
  }
  return j;
}

template <class E>
float simd_row_lse(const typename E::Storage* x, int64_t V) {
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df));
  auto m = hn::Set(df, -INFINITY);
  auto odd = hn::Zero(df);  // x - x: 0 for finite x, NaN for NaN and infinities
  int64_t j = 0;
  for (; j + lanes <= V; j += lanes) {
    const VF v = load_f32<E>(x + j);
    m = hn::Max(m, v);
    odd = hn::Add(odd, hn::Sub(v, v));
  }
  float top = hn::GetLane(hn::MaxOfLanes(df, m)), check = hn::GetLane(hn::SumOfLanes(df, odd));
  for (int64_t k = j; k < V; ++k) top = std::fmax(top, E::load(x[k]));
  // Masked classes (-inf) make `check` NaN too: the scalar path is exact for all such rows.
  if (!std::isfinite(check) || !std::isfinite(top)) return scalar_row_lse<E>(x, V);
  auto sum = hn::Zero(df);
  const int64_t done = exp_vectors<E>(x, V, top, [&](int64_t, VF e) { sum = hn::Add(sum, e); });
  float total = hn::GetLane(hn::SumOfLanes(df, sum));
  for (int64_t k = done; k < V; ++k) total += std::exp(E::load(x[k]) - top);
  return top + std::log(total);
}

template <class E>
void simd_exp_row(const typename E::Storage* x, typename E::Storage* d, int64_t V, float lse, float scale,
                  float floor) {
  if (!std::isfinite(lse)) return scalar_exp_row<E>(x, d, V, lse, scale, floor);
  const DF df;
  const auto sv = hn::Set(df, scale), fv = hn::Set(df, floor);
  const int64_t done = exp_vectors<E>(x, V, lse, [&](int64_t j, VF e) { store_f32<E>(hn::MulSub(sv, e, fv), d + j); });
  scalar_exp_row<E>(x + done, d + done, V - done, lse, scale, floor);
}

}  // namespace xhal::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif

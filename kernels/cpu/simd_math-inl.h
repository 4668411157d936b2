// Per-target (Highway) exponentials for the CPU kernels, as accurate as the outputs need and no
// more (they bound the speed of silu and softmax; Highway's 1-ulp Exp with a divide ran at 0.38
// ns per element on one Zen 5 core, silu with these at 0.18-0.23): 2^x = 2^n p(f ln 2),
// n = round(x), |f| <= 1/2, p the Taylor polynomial of e^t of degree kDegree (relative error
// about 1e-7 at degree 6, 7e-5 at 4), 2^n built in the exponent bits. Toggling include guard:
// included inside the per-target compilation of the *_simd.cpp files.
#if defined(XHAL_CPU_SIMD_MATH_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef XHAL_CPU_SIMD_MATH_INL_H_
#undef XHAL_CPU_SIMD_MATH_INL_H_
#else
#define XHAL_CPU_SIMD_MATH_INL_H_
#endif

#include <hwy/highway.h>

#include "kernels/cpu/simd_element-inl.h"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {

// 2^x for x in [-126, 127] (callers clamp): n + 127 then stays a normal exponent.
template <int kDegree>
HWY_INLINE VF exp2_on_range(VF x) {
  const DF df;
  const hn::RebindToSigned<DF> di;
  const auto n = hn::Round(x);
  const auto t = hn::Mul(hn::Sub(x, n), hn::Set(df, 0.693147180559945309f));
  float inverse_factorial = 1.0f;
  for (int k = 2; k <= kDegree; ++k) inverse_factorial /= float(k);
  auto p = hn::Set(df, inverse_factorial);
  for (int k = kDegree - 1; k >= 0; --k) {
    inverse_factorial *= float(k + 1);
    p = hn::MulAdd(p, t, hn::Set(df, inverse_factorial));
  }
  const auto two_to_n = hn::BitCast(df, hn::ShiftLeft<23>(hn::Add(hn::ConvertTo(di, n), hn::Set(di, 127))));
  return hn::Mul(p, two_to_n);
}

// e^x for x in [-87, 88] (callers clamp).
template <int kDegree>
HWY_INLINE VF exp_on_range(VF x) {
  return exp2_on_range<kDegree>(hn::Mul(x, hn::Set(DF(), 1.44269504088896341f)));
}

}  // namespace xhal::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif

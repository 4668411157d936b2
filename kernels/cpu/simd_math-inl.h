// Per-target (Highway) exponentials for the CPU kernels, as accurate as the outputs need and no
// more (they bound the speed of silu and softmax; Highway's 1-ulp Exp with a divide ran at 0.38
// ns per element on one Zen 5 core, silu with these at 0.18-0.23): 2^x = 2^n 2^f, n = round(x),
// |f| <= 1/2, 2^f = e^(f ln 2) by its Taylor polynomial of degree kDegree (relative error about
// 1e-7 at degree 6, 7e-5 at 4). Toggling include guard:
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

// 2^x for x in [-126, 127] (callers clamp): the polynomial in f = x - n directly (coefficients
// ln2^k / k!), times 2^n. AVX-512: n = round(x), then one vscalefps. Elsewhere: x + 1.5 * 2^23
// rounds x to the nearest integer n in the sum's low mantissa bits (two instructions where
// Round and a checked float-to-int conversion take six), and (n + 127) << 23 is 2^n's bits (the
// sum's exponent bits are shifted out).
template <int kDegree>
HWY_INLINE VF exp2_on_range(VF x) {
  const DF df;
#ifdef XHAL_CPU_AVX512
  const auto n = hn::Round(x);
#else
  const auto magic = hn::Set(df, 12582912.0f);  // 1.5 * 2^23
  const auto shifted = hn::Add(x, magic);
  const auto n = hn::Sub(shifted, magic);
#endif
  const auto f = hn::Sub(x, n);
  constexpr float kLn2 = 0.693147180559945309f;
  float coefficient[kDegree + 1];
  coefficient[0] = 1.0f;
  for (int k = 1; k <= kDegree; ++k) coefficient[k] = coefficient[k - 1] * kLn2 / float(k);
  auto p = hn::Set(df, coefficient[kDegree]);
  for (int k = kDegree - 1; k >= 0; --k) p = hn::MulAdd(p, f, hn::Set(df, coefficient[k]));
#ifdef XHAL_CPU_AVX512
  return VF{_mm512_scalef_ps(p.raw, n.raw)};
#else
  const hn::RebindToSigned<DF> di;
  const auto two_to_n = hn::BitCast(df, hn::ShiftLeft<23>(hn::Add(hn::BitCast(di, shifted), hn::Set(di, 127))));
  return hn::Mul(p, two_to_n);
#endif
}

// silu(g) = g / (1 + e^-g), as 2^(-g log2 e) clamped to [2^-126, 2^126] (beyond, silu(g) is g or
// -0 in f32), the reciprocal from the hardware estimate (relative error 2^-14 on AVX-512, below
// bf16's and f16's rounding), refined once by Newton for f32.
template <int kDegree, bool kRefine>
HWY_INLINE VF silu(VF g) {
  const DF df;
  const auto x = hn::Min(hn::Max(hn::Mul(g, hn::Set(df, -1.44269504088896341f)), hn::Set(df, -126.0f)),
                         hn::Set(df, 126.0f));
  const auto d = hn::Add(hn::Set(df, 1.0f), exp2_on_range<kDegree>(x));
  auto r = hn::ApproximateReciprocal(d);
  if constexpr (kRefine) r = hn::Mul(r, hn::NegMulAdd(d, r, hn::Set(df, 2.0f)));
  return hn::Mul(g, r);
}

// How many dot products are summed in registers and reduced together: 16 on AVX-512 (32
// registers), 8 elsewhere (16).
#ifdef XHAL_CPU_AVX512
inline constexpr int kSumBlock = 16;
#else
inline constexpr int kSumBlock = 8;
#endif

// out[i] = the sum of v[i]'s lanes, i < kSumBlock. AVX-512: a tree that adds halves of two vectors
// at a time, transposing as it goes (45 instructions for the 16 sums, against about 8 for each one
// alone); its output lane 4a + b is its input 4b + a. AVX2: horizontal adds of pairs, then the
// two 128-bit halves (9 instructions for 8 sums).
HWY_INLINE void sum_lanes_of_block(const VF* v, float* out) {
#ifdef XHAL_CPU_AVX512
  __m512 x[16];
  for (int i = 0; i < 16; ++i) x[4 * (i % 4) + i / 4] = v[i].raw;
  for (int i = 0; i < 8; ++i) {  // 256-bit halves
    x[i] = _mm512_add_ps(_mm512_shuffle_f32x4(x[2 * i], x[2 * i + 1], 0x44),
                         _mm512_shuffle_f32x4(x[2 * i], x[2 * i + 1], 0xEE));
  }
  for (int i = 0; i < 4; ++i) {  // 128-bit quarters
    x[i] = _mm512_add_ps(_mm512_shuffle_f32x4(x[2 * i], x[2 * i + 1], 0x88),
                         _mm512_shuffle_f32x4(x[2 * i], x[2 * i + 1], 0xDD));
  }
  for (int i = 0; i < 2; ++i) {  // pairs within quarters
    x[i] = _mm512_add_ps(_mm512_shuffle_ps(x[2 * i], x[2 * i + 1], 0x44), _mm512_shuffle_ps(x[2 * i], x[2 * i + 1], 0xEE));
  }
  _mm512_storeu_ps(out, _mm512_add_ps(_mm512_shuffle_ps(x[0], x[1], 0x88), _mm512_shuffle_ps(x[0], x[1], 0xDD)));
#elif HWY_TARGET == HWY_AVX2
  // Within each 128-bit half: pairs of lanes, then quads; lane i of a half then holds half-sum i.
  const __m256 h0 = _mm256_hadd_ps(v[0].raw, v[1].raw), h1 = _mm256_hadd_ps(v[2].raw, v[3].raw);
  const __m256 h2 = _mm256_hadd_ps(v[4].raw, v[5].raw), h3 = _mm256_hadd_ps(v[6].raw, v[7].raw);
  const __m256 g0 = _mm256_hadd_ps(h0, h1), g1 = _mm256_hadd_ps(h2, h3);
  _mm256_storeu_ps(out, _mm256_add_ps(_mm256_permute2f128_ps(g0, g1, 0x20), _mm256_permute2f128_ps(g0, g1, 0x31)));
#else
  for (int i = 0; i < kSumBlock; ++i) out[i] = hn::GetLane(hn::SumOfLanes(DF(), v[i]));
#endif
}

}  // namespace xhal::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif

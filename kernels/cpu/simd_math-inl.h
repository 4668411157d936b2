// Per-target (Highway) exponentials for the CPU kernels, as accurate as the outputs need and no
// more (they bound the speed of silu and softmax; Highway's 1-ulp Exp with a divide ran at 0.38
// ns per element on one Zen 5 core, silu with these at 0.18-0.23): 2^x = 2^n 2^f, n = round(x),
// |f| <= 1/2, 2^f by a polynomial of degree kDegree fitted to it on [-1/2, 1/2] (Chebyshev
// interpolation, rounded to f32: relative error 1.0e-4 at degree 3, 3.5e-6 at 4, 1.6e-7 at 5,
// against 8e-4, 6e-5 and 3e-6 for Taylor's of the same degrees). Toggling include guard:
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

// Coefficients c[0..kDegree] of the fitted polynomial for 2^f, |f| <= 1/2.
template <int kDegree>
inline constexpr float kExp2Poly[kDegree + 1] = {};
template <>
inline constexpr float kExp2Poly<3>[4] = {0.999924541f, 0.693136752f, 0.242639482f, 0.0558382832f};
template <>
inline constexpr float kExp2Poly<4>[5] = {1.0f, 0.693121016f, 0.240223497f, 0.0559219755f, 0.00966636837f};
template <>
inline constexpr float kExp2Poly<5>[6] = {1.00000012f,   0.693147182f,   0.240221068f,
                                          0.0555035695f, 0.00967603177f, 0.00133908633f};

// e[k] = 2^(a[k] * b) for a[k] * b in [-126, 126] (callers clamp), the kN computations advanced
// step by step together (see times_sigmoid). AVX-512: n = round(a b), f = a b - n by one fused
// multiply-subtract, the polynomial, one vscalefps. Elsewhere: a b + 1.5 * 2^23 rounds a b to the
// nearest integer n in the sum's low mantissa bits (one instruction where Round and a checked
// float-to-int conversion take six), and (n + 127) << 23 is 2^n's bits (the sum's exponent bits
// are shifted out).
template <int kDegree, int kN>
HWY_INLINE void exp2_of_products(VF (&e)[kN], const VF (&a)[kN], VF b) {
  const DF df;
  const float* c = kExp2Poly<kDegree>;
  VF n[kN], f[kN];
#ifdef XHAL_CPU_AVX512
  for (int k = 0; k < kN; ++k) n[k] = hn::Round(hn::Mul(a[k], b));
#else
  const auto magic = hn::Set(df, 12582912.0f);  // 1.5 * 2^23
  VF shifted[kN];
  for (int k = 0; k < kN; ++k) shifted[k] = hn::MulAdd(a[k], b, magic);
  for (int k = 0; k < kN; ++k) n[k] = hn::Sub(shifted[k], magic);
#endif
  for (int k = 0; k < kN; ++k) f[k] = hn::MulSub(a[k], b, n[k]);
  for (int k = 0; k < kN; ++k) e[k] = hn::MulAdd(hn::Set(df, c[kDegree]), f[k], hn::Set(df, c[kDegree - 1]));
  for (int j = kDegree - 2; j >= 0; --j) {
    for (int k = 0; k < kN; ++k) e[k] = hn::MulAdd(e[k], f[k], hn::Set(df, c[j]));
  }
#ifdef XHAL_CPU_AVX512
  for (int k = 0; k < kN; ++k) e[k] = VF{_mm512_scalef_ps(e[k].raw, n[k].raw)};
#else
  const hn::RebindToSigned<DF> di;
  for (int k = 0; k < kN; ++k) {
    e[k] = hn::Mul(e[k], hn::BitCast(df, hn::ShiftLeft<23>(hn::Add(hn::BitCast(di, shifted[k]), hn::Set(di, 127)))));
  }
#endif
}

// 2^x for x in [-126, 126] (callers clamp).
template <int kDegree>
HWY_INLINE VF exp2_on_range(VF x) {
  VF e[1];
  const VF a[1] = {x};
  exp2_of_products<kDegree>(e, a, hn::Set(DF(), 1.0f));
  return e[0];
}

// v[k] = p[k] / (1 + e^-y[k]) (p times the logistic sigmoid of y) for k < kN, with e^-y = 2^(-y
// log2 e), y clamped to [-87, 87] for it (beyond, the sigmoid is 1 in f32, or under 2e-38), the
// reciprocal from the hardware estimate (relative error 2^-12 on AVX2, 2^-14 on AVX-512: below
// bf16's rounding), refined once by Newton when kRefine (f32). silu(g) u is p = g u, y = g; callers
// form p beside the exponential, not after it.
// The kN chains (each ~15 dependent instructions) advance step by step together: issued one after
// the other, they fill the core's scheduler with instructions waiting on their predecessors and
// leave its pipes idle (Zen 3: four chains at a time 1.2x faster than two).
template <int kN, int kDegree, bool kRefine>
HWY_INLINE void times_sigmoid(VF (&v)[kN], const VF (&y)[kN], const VF (&p)[kN]) {
  const DF df;
  const auto lo = hn::Set(df, -87.0f), hi = hn::Set(df, 87.0f), minus_log2e = hn::Set(df, -1.44269504088896341f);
  VF clamped[kN], d[kN];
  for (int k = 0; k < kN; ++k) clamped[k] = hn::Min(hn::Max(y[k], lo), hi);
  exp2_of_products<kDegree>(d, clamped, minus_log2e);
  for (int k = 0; k < kN; ++k) d[k] = hn::Add(d[k], hn::Set(df, 1.0f));
  for (int k = 0; k < kN; ++k) {
    auto r = hn::ApproximateReciprocal(d[k]);
    if constexpr (kRefine) r = hn::Mul(r, hn::NegMulAdd(d[k], r, hn::Set(df, 2.0f)));
    v[k] = hn::Mul(p[k], r);
  }
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
    x[i] =
        _mm512_add_ps(_mm512_shuffle_ps(x[2 * i], x[2 * i + 1], 0x44), _mm512_shuffle_ps(x[2 * i], x[2 * i + 1], 0xEE));
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

// Per-target (Highway) loads and stores of the CPU kernels' element types as f32 vectors: bf16 is
// widened by a shift and stored rounded to nearest even by integer arithmetic (Highway's own bf16
// demotion truncates), NaN staying NaN; f16 goes through Highway's conversions (F16C). Included by
// the *_simd.cpp files inside their per-target compilation (hwy/foreach_target.h), hence the
// toggling include guard.
#if defined(XHAL_CPU_SIMD_ELEMENT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef XHAL_CPU_SIMD_ELEMENT_INL_H_
#undef XHAL_CPU_SIMD_ELEMENT_INL_H_
#else
#define XHAL_CPU_SIMD_ELEMENT_INL_H_
#endif

#include <hwy/highway.h>
#if HWY_ARCH_X86
#include <xmmintrin.h>  // _mm_sfence
#endif

#include <dlpack/dlpack.h>

#include <type_traits>

#include "kernels/cpu/element.hpp"
#include "kernels/cpu/cpu_features.hpp"
#include "kernels/cpu/stream_threshold.hpp"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// XHAL_CPU_AVX512: this per-target compilation is AVX-512's (set anew for each target's pass, and
// in force for the rest of the including file's pass). BF16Native's instructions are written
// through the assembler there (Highway 1.0.3 has no bf16 target to compile them for); only
// BF16Native, chosen when the CPU has AVX512_BF16, runs them.
#undef XHAL_CPU_AVX512
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#define XHAL_CPU_AVX512 1
#endif

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

// Lanes(DF()) elements of E at p, as f32.
template <class E>
HWY_INLINE VF load_f32(const typename E::Storage* p) {
  const DF df;
  if constexpr (E::kDType == XHAL_DTYPE_F32) {
    return hn::LoadU(df, p);
  } else if constexpr (E::kDType == XHAL_DTYPE_BF16) {
    const hn::RebindToUnsigned<DF> du32;
    const hn::Rebind<uint16_t, DF> du16;
    return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du32, hn::LoadU(du16, p))));
  } else {
    const hn::Rebind<hwy::float16_t, DF> df16;
    return hn::PromoteTo(df, hn::LoadU(df16, reinterpret_cast<const hwy::float16_t*>(p)));
  }
}

// What rounding to bf16 may assume of the values' NaNs. any: nothing; every NaN is found and
// kept a quiet NaN (three more instructions per vector). from_bf16: the values were computed by
// x86 arithmetic from bf16 numbers and finite constants only, so a NaN among them has the low 16
// bits zero (a widened bf16 NaN has; x86 arithmetic passes an operand NaN on, quieted, and makes
// new ones as 0xFFC00000) and the rounding increment (at most 0x8000) leaves its high half as it
// is: the same bits as `any` gives, without the test. Elsewhere than on x86, from_bf16 tests too.
enum class NaNs { any, from_bf16 };

// v rounded to bf16 (nearest even, NaN kept a quiet NaN), in the high half of each 32-bit lane
// (the low half is garbage).
template <NaNs kNaNs = NaNs::any>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<DF>> bf16_in_high_half(VF v) {
  const hn::RebindToUnsigned<DF> du32;
  const auto bits = hn::BitCast(du32, v);
  const auto lsb = hn::And(hn::ShiftRight<16>(bits), hn::Set(du32, 1));
  const auto rounded = hn::Add(bits, hn::Add(lsb, hn::Set(du32, 0x7FFF)));
  if constexpr (kNaNs == NaNs::from_bf16 && HWY_ARCH_X86) return rounded;
  const auto quiet_nan = hn::Or(bits, hn::Set(du32, 0x00400000));
  return hn::IfThenElse(hn::RebindMask(du32, hn::IsNaN(v)), quiet_nan, rounded);
}

// StoreU, or Stream (kStream) to an address aligned to the vector.
template <bool kStream, class D, class T>
HWY_INLINE void put(hn::Vec<D> v, D d, T* p) {
  if constexpr (kStream) {
    hn::Stream(v, d, p);
  } else {
    hn::StoreU(v, d, p);
  }
}

// Stores Lanes(DF()) elements of v to p as E. kStream: non-temporal stores, which skip reading the
// destination's cache lines before writing them (a third of a copy's memory traffic); p must then
// be aligned to the stored vector's size (stream_alignment<E>() covers it), and the writing thread must call
// stream_fence() before others read what it wrote.
template <class E, bool kStream = false, NaNs kNaNs = NaNs::any>
HWY_INLINE void store_f32(VF v, typename E::Storage* p) {
  const DF df;
  if constexpr (E::kDType == XHAL_DTYPE_F32) {
    put<kStream>(v, df, p);
  } else if constexpr (E::kDType == XHAL_DTYPE_BF16) {
    const hn::RebindToSigned<DF> di32;
    const hn::Rebind<uint16_t, DF> du16;
#ifdef XHAL_CPU_AVX512
    if constexpr (std::is_same_v<E, BF16Native>) {
      __m256i raw;
      asm("vcvtneps2bf16 %1, %0" : "=v"(raw) : "v"(v.raw));
      const hn::Vec<decltype(du16)> packed{raw};
      put<kStream>(packed, du16, p);
      return;
    }
#endif
    const auto half = hn::ShiftRight<16>(bf16_in_high_half<kNaNs>(v));
    const auto packed = hn::DemoteTo(du16, hn::BitCast(di32, half));
    put<kStream>(packed, du16, p);
  } else {
    const hn::Rebind<hwy::float16_t, DF> df16;
    const auto packed = hn::DemoteTo(df16, v);
    put<kStream>(packed, df16, reinterpret_cast<hwy::float16_t*>(p));
  }
}

// Pairs of vectors for elementwise ops: load2_f32 reads 2 * Lanes(DF()) elements of E into two
// f32 vectors in an order of its choosing and store2_f32 writes two vectors back in the same
// order, so an op that treats every lane alike can use them without knowing the order. bf16: the
// even elements in one vector and the odd ones in the other (one shift or mask per vector instead
// of a widening shuffle and a shift; no narrowing shuffle on the way back: the rounded halves land
// in place), written back by one vcvtne2ps2bf16 and one shuffle where the CPU has AVX512_BF16.
// Elsewhere (and on the scalar target, whose vectors hold one lane): two load_f32/store_f32.
template <class E>
HWY_INLINE void load2_f32(const typename E::Storage* p, VF& a, VF& b) {
#if HWY_TARGET != HWY_SCALAR
  if constexpr (E::kDType == XHAL_DTYPE_BF16) {
    const DF df;
    const hn::RebindToUnsigned<DF> du32;
    const auto bits = hn::LoadU(du32, reinterpret_cast<const uint32_t*>(p));
    a = hn::BitCast(df, hn::ShiftLeft<16>(bits));
    b = hn::BitCast(df, hn::And(bits, hn::Set(du32, 0xFFFF0000u)));
    return;
  }
#endif
  a = load_f32<E>(p);
  b = load_f32<E>(p + hn::Lanes(DF()));
}

template <class E, bool kStream = false, NaNs kNaNs = NaNs::any>
HWY_INLINE void store2_f32(VF a, VF b, typename E::Storage* p) {
#if HWY_TARGET != HWY_SCALAR
  if constexpr (E::kDType == XHAL_DTYPE_BF16) {
    const hn::Repartition<uint16_t, DF> du16;
#ifdef XHAL_CPU_AVX512
    if constexpr (std::is_same_v<E, BF16Native>) {
      // bf16(a) in the low half, bf16(b) in the high one; element 2k is a's k-th, 2k+1 b's.
      hn::Vec<decltype(du16)> halves;
      asm("vcvtne2ps2bf16 %2, %1, %0" : "=v"(halves.raw) : "v"(b.raw), "v"(a.raw));
      const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7,
                                                  22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
      const hn::Vec<decltype(du16)> packed{
          _mm512_permutexvar_epi16(interleave, halves.raw)};  // Highway 1.0.3: no 16-bit table lookup
      put<kStream>(packed, du16, p);
      return;
    }
#endif
    // a's rounded halves in the low 16 bits of each lane (even elements), b's in the high ones.
    const auto packed = hn::OddEven(hn::BitCast(du16, bf16_in_high_half<kNaNs>(b)),
                                    hn::BitCast(du16, hn::ShiftRight<16>(bf16_in_high_half<kNaNs>(a))));
    put<kStream>(packed, du16, p);
    return;
  }
#endif
  store_f32<E, kStream, kNaNs>(a, p);
  store_f32<E, kStream, kNaNs>(b, p + hn::Lanes(DF()));
}

// dst = src (n floats) with each whole pair of vectors (2 * Lanes(DF()) floats) in load2_f32<E>'s
// order, the rest in place: LoadU of two vectors from dst at p then matches load2_f32<E> at p, so
// f32 operands (cos and sin rows, say) line up with E values read in pairs.
template <class E>
HWY_INLINE void to_pair_order(const float* src, float* dst, int64_t n) {
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df));
  int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const VF lo = hn::LoadU(df, src + i), hi = hn::LoadU(df, src + i + lanes);
#if HWY_TARGET != HWY_SCALAR
    if constexpr (E::kDType == XHAL_DTYPE_BF16) {  // the even elements, then the odd ones
      hn::StoreU(hn::ConcatEven(df, hi, lo), df, dst + i), hn::StoreU(hn::ConcatOdd(df, hi, lo), df, dst + i + lanes);
      continue;
    }
#endif
    hn::StoreU(lo, df, dst + i), hn::StoreU(hi, df, dst + i + lanes);
  }
  for (; i < n; ++i) dst[i] = src[i];
}

// The inverse of to_pair_order, in place: each whole pair of vectors of p from load2_f32<E>'s order
// back to column order.
template <class E>
HWY_INLINE void from_pair_order(float* p, int64_t n) {
#if HWY_TARGET != HWY_SCALAR
  if constexpr (E::kDType == XHAL_DTYPE_BF16) {
    const int64_t lanes = int64_t(hn::Lanes(DF()));
    float columns[2 * HWY_MAX_BYTES / sizeof(float)];
    for (int64_t i = 0; i + 2 * lanes <= n; i += 2 * lanes) {
      for (int64_t k = 0; k < lanes; ++k) columns[2 * k] = p[i + k], columns[2 * k + 1] = p[i + lanes + k];
      for (int64_t k = 0; k < 2 * lanes; ++k) p[i + k] = columns[k];
    }
  }
#endif
  (void)p, (void)n;
}

// Sum of x[i]^2 over i < n, accumulated in f32. bf16 on CPUs with AVX512_BF16: vdpbf16ps squares
// and adds 32 elements per instruction without widening them first (bf16 products are exact in
// f32; the instruction treats subnormal inputs as zero, whose squares underflow anyway).
template <class E>
HWY_INLINE float sum_squares(const typename E::Storage* x, int64_t n) {
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df));
  auto sum0 = hn::Zero(df), sum1 = hn::Zero(df);
  int64_t i = 0;
#ifdef XHAL_CPU_AVX512
  if constexpr (std::is_same_v<E, BF16Native>) {
    const hn::ScalableTag<uint16_t> du16;
    for (; i + 4 * lanes <= n; i += 4 * lanes) {  // two sums: the latency is not the limit
      const auto a = hn::LoadU(du16, x + i), b = hn::LoadU(du16, x + i + 2 * lanes);
      asm("vdpbf16ps %1, %1, %0" : "+v"(sum0.raw) : "v"(a.raw));
      asm("vdpbf16ps %1, %1, %0" : "+v"(sum1.raw) : "v"(b.raw));
    }
  }
#endif
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    VF a, b;
    load2_f32<E>(x + i, a, b);
    sum0 = hn::MulAdd(a, a, sum0);
    sum1 = hn::MulAdd(b, b, sum1);
  }
  for (; i + lanes <= n; i += lanes) {
    const auto a = load_f32<E>(x + i);
    sum0 = hn::MulAdd(a, a, sum0);
  }
  float total = hn::GetLane(hn::SumOfLanes(df, hn::Add(sum0, sum1)));
  for (; i < n; ++i) total += E::load(x[i]) * E::load(x[i]);
  return total;
}

// Whether bf16 dot products of E run on vdpbf16ps (dot_bf16): BF16Native on AVX-512.
template <class E>
inline constexpr bool kBf16Dot =
#ifdef XHAL_CPU_AVX512
    std::is_same_v<E, BF16Native>;
#else
    false;
#endif

#ifdef XHAL_CPU_AVX512
// acc += a[2i] b[2i] + a[2i+1] b[2i+1] per f32 lane, a and b 2 * Lanes(DF()) bf16 each (products
// exact in f32; subnormal inputs count as zero). Only where kBf16Dot<E> holds.
template <class V16>
HWY_INLINE void dot_bf16(VF& acc, V16 a, V16 b) {
  asm("vdpbf16ps %2, %1, %0" : "+v"(acc.raw) : "v"(a.raw), "v"(b.raw));
}
#endif

// dst[0..n) = src[0..n) * scale as f32 (a row of E converted for f32 arithmetic).
template <class E>
HWY_INLINE void convert_row(const typename E::Storage* src, float* dst, int64_t n, float scale = 1.0f) {
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df));
  const auto sv = hn::Set(df, scale);
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(hn::Mul(load_f32<E>(src + i), sv), df, dst + i);
  for (; i < n; ++i) dst[i] = E::load(src[i]) * scale;
}

// The alignment streaming stores of E need: the widest store, store2_f32's two vectors.
template <class E>
HWY_INLINE size_t stream_alignment() {
  return 2 * hn::Lanes(DF()) * sizeof(typename E::Storage);
}

// Orders this thread's streaming stores before what follows (they bypass the usual ordering).
HWY_INLINE void stream_fence() {
#if HWY_ARCH_X86
  _mm_sfence();
#endif
}

// Calls f.template operator()<E>() with E the element type of `dtype`: BF16Native for bf16 on CPUs
// that round f32 to bf16 themselves.
template <class F>
HWY_INLINE void with_element(xhal_dtype dtype, F&& f) {
  switch (dtype) {
    case XHAL_DTYPE_F32: return f.template operator()<F32>();
    case XHAL_DTYPE_F16: return f.template operator()<F16>();
    default: return cpu_has_bf16_convert() ? f.template operator()<BF16Native>() : f.template operator()<BF16>();
  }
}

// Whether an op should write `out` (rows of E, inner stride 1) with streaming stores: when it is
// far larger than the caches (a later op would not find it there anyway) and every row starts
// aligned to stream_alignment<E>(). Rows are then written from their start.
template <class E>
HWY_INLINE bool should_stream(const DLTensor* out) {
  const int64_t vb = int64_t(stream_alignment<E>()), elt = int64_t(sizeof(typename E::Storage));
  int64_t numel = 1;
  for (int d = 0; d < out->ndim; ++d) numel *= out->shape[d];
  if (numel * elt < int64_t(kStreamBytes) || reinterpret_cast<uintptr_t>(out->data) % uintptr_t(vb) != 0) return false;
  for (int d = 0; d + 1 < out->ndim; ++d) {
    if (out->shape[d] > 1 && (out->strides[d] * elt) % vb != 0) return false;
  }
  return true;
}

}  // namespace xhal::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif

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

#include "kernels/cpu/element.hpp"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

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

// Stores Lanes(DF()) elements of v to p as E.
template <class E>
HWY_INLINE void store_f32(VF v, typename E::Storage* p) {
  const DF df;
  if constexpr (E::kDType == XHAL_DTYPE_F32) {
    hn::StoreU(v, df, p);
  } else if constexpr (E::kDType == XHAL_DTYPE_BF16) {
    const hn::RebindToUnsigned<DF> du32;
    const hn::RebindToSigned<DF> di32;
    const hn::Rebind<uint16_t, DF> du16;
    const auto bits = hn::BitCast(du32, v);
    const auto lsb = hn::And(hn::ShiftRight<16>(bits), hn::Set(du32, 1));
    const auto rounded = hn::ShiftRight<16>(hn::Add(bits, hn::Add(lsb, hn::Set(du32, 0x7FFF))));
    const auto quiet_nan = hn::ShiftRight<16>(hn::Or(bits, hn::Set(du32, 0x00400000)));
    const auto half = hn::IfThenElse(hn::RebindMask(du32, hn::IsNaN(v)), quiet_nan, rounded);
    hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di32, half)), du16, p);
  } else {
    const hn::Rebind<hwy::float16_t, DF> df16;
    hn::StoreU(hn::DemoteTo(df16, v), df16, reinterpret_cast<hwy::float16_t*>(p));
  }
}

}  // namespace xhal::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif

// argmax with SIMD (Highway, best target picked at run time): rows in parallel, each in two passes,
// the first the row's largest value and whether it holds a NaN (four vector pairs at a time, the
// order within a pair immaterial), the second the first position holding that value (or the first
// NaN), read again from the cache. Registered above the reference kernel of argmax.cpp.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/argmax_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <cmath>
#include <cstdint>

#include "kernels/cpu/argmax_rows.hpp"
#include "kernels/cpu/kernel_registration.hpp"
#include "kernels/cpu/simd_element-inl.h"
#include "kernels/cpu/tensor_ref.hpp"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {

template <class E>
int64_t argmax_row(const typename E::Storage* row, int64_t n) {
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df));
  // Four running maxima and NaN flags (v != v as all-ones lanes, ORed), so that the loads and
  // compares of a step do not wait on each other.
  VF largest[4], seen_nan[4];  // IsNaN: Highway's Ne is ordered (false for NaN)
  for (int k = 0; k < 4; ++k) largest[k] = hn::Set(df, -INFINITY), seen_nan[k] = hn::Zero(df);
  auto take = [&](int k, VF v) {
    largest[k] = hn::Max(largest[k], v);
    seen_nan[k] = hn::Or(seen_nan[k], hn::VecFromMask(df, hn::IsNaN(v)));
  };
  int64_t i = 0;
  for (; i + 8 * lanes <= n; i += 8 * lanes) {
    VF a[8];
    for (int k = 0; k < 4; ++k) load2_f32<E>(row + i + 2 * k * lanes, a[2 * k], a[2 * k + 1]);
    for (int k = 0; k < 4; ++k) take(k, a[2 * k]), take(k, a[2 * k + 1]);
  }
  for (; i + lanes <= n; i += lanes) take(0, load_f32<E>(row + i));
  float best =
      hn::GetLane(hn::MaxOfLanes(df, hn::Max(hn::Max(largest[0], largest[1]), hn::Max(largest[2], largest[3]))));
  bool nan =
      !hn::AllFalse(df, hn::MaskFromVec(hn::Or(hn::Or(seen_nan[0], seen_nan[1]), hn::Or(seen_nan[2], seen_nan[3]))));
  for (int64_t j = i; j < n; ++j) {
    const float v = E::load(row[j]);
    nan = nan || v != v;
    best = v > best ? v : best;
  }
  // Second pass: the first lane equal to the largest value (or holding a NaN).
  const VF target = hn::Set(df, best);
  for (i = 0; i + lanes <= n; i += lanes) {
    const VF v = load_f32<E>(row + i);
    const auto hit = nan ? hn::IsNaN(v) : hn::Eq(v, target);
    const intptr_t lane = hn::FindFirstTrue(df, hit);
    if (lane >= 0) return i + lane;
  }
  for (; i < n; ++i) {
    const float v = E::load(row[i]);
    if (nan ? v != v : v == best) return i;
  }
  return 0;  // not reached: the largest value is in the row
}

void argmax_simd(const xhal_op_call* c) {
  with_element(c->dtype, [&]<class E>() { argmax_rows<typename E::Storage>(c, argmax_row<E>); });
}

}  // namespace xhal::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace xhal::cpu {

HWY_EXPORT(argmax_simd);

namespace {
template <class E>
struct ArgmaxSimd {
  static xhal_status run(const xhal_op_call* c, char*, size_t) {
    HWY_DYNAMIC_DISPATCH(argmax_simd)(c);
    return XHAL_OK;
  }
};
}  // namespace

XHAL_REGISTER_KERNELS(host) { register_fast_kernels<ArgmaxSimd>(host, "cpu.argmax_simd", XHAL_OP_ARGMAX); }

}  // namespace xhal::cpu
#endif

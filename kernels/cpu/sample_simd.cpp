// sample with SIMD weights and radix-select thresholds (Highway, best target picked at run time).
// The weights are kernels/sampling.hpp's polynomial as vector operations: the same roundings as
// the scalar code only where the target fuses multiply-adds, so targets without FMA compute them
// one at a time. top-k's and top-p's thresholds come from radix selects on the keys (8-bit digits,
// the highest first) instead of the reference's sort: the first digit's pass goes over the row, the
// later ones over the positions the chosen digits still admit. Registered above cpu.sample.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/sample_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <iterator>

#include "kernels/cpu/kernel_registration.hpp"
#include "kernels/cpu/sample_rows.hpp"
#include "kernels/cpu/simd_element-inl.h"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {

void simd_weights(const float* x, int64_t n, float max, float temperature, SampleRowWork& w) {
  int64_t i = 0;
#if HWY_NATIVE_FMA
  const DF df;
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const int64_t lanes = int64_t(hn::Lanes(df));
  for (; i + lanes <= n; i += lanes) {
    const VF v = hn::LoadU(df, x + i);
    const auto bits = hn::BitCast(du, v);
    const auto negative = hn::RebindMask(du, hn::Lt(hn::BitCast(di, v), hn::Zero(di)));
    hn::StoreU(hn::IfThenElse(negative, hn::Not(bits), hn::Or(bits, hn::Set(du, 0x80000000u))), du, w.keys + i);
    const VF d = hn::Div(hn::Sub(v, hn::Set(df, max)), hn::Set(df, temperature));
    const auto in_range = hn::Gt(d, hn::Set(df, -32.0f));
    const VF k = hn::Round(hn::Mul(d, hn::Set(df, 1.44269504f)));
    VF r = hn::MulAdd(k, hn::Set(df, -0.693145752f), d);
    r = hn::MulAdd(k, hn::Set(df, -1.42860677e-6f), r);
    VF p = hn::Set(df, 1.0f / 5040.0f);
    p = hn::MulAdd(p, r, hn::Set(df, 1.0f / 720.0f));
    p = hn::MulAdd(p, r, hn::Set(df, 1.0f / 120.0f));
    p = hn::MulAdd(p, r, hn::Set(df, 1.0f / 24.0f));
    p = hn::MulAdd(p, r, hn::Set(df, 1.0f / 6.0f));
    p = hn::MulAdd(p, r, hn::Set(df, 0.5f));
    p = hn::MulAdd(p, r, hn::Set(df, 1.0f));
    p = hn::MulAdd(p, r, hn::Set(df, 1.0f));
    // 2^k from the exponent bits; lanes out of range hold garbage here and are zeroed below.
    const VF scale = hn::BitCast(
        df, hn::ShiftLeft<23>(hn::Add(hn::ConvertTo(di, hn::IfThenElseZero(in_range, k)), hn::Set(di, 127))));
    const VF weight = hn::Mul(hn::Mul(p, scale), hn::Set(df, 1099511627776.0f));  // 2^40
    hn::StoreU(hn::IfThenElseZero(in_range, weight), df, w.weights + i);
  }
#endif
  scalar_keys_and_weights(x, i, n, max, temperature, w);
}

// The largest key t whose measure over the keys >= t (and >= floor) reaches `need`, or with
// top_p >= 0 top-p's target of their total. `order` holds the candidates after the first digit.
template <class Measure>
uint32_t radix_select(const SampleRowWork& w, int64_t n, uint32_t floor, uint64_t need, float top_p,
                      Measure&& measure) {
  uint64_t bins[256];
  uint32_t prefix = 0;
  int64_t candidates = 0;
  for (int shift = 24; shift >= 0; shift -= 8) {
    std::fill(std::begin(bins), std::end(bins), uint64_t(0));
    if (shift == 24) {
      for (int64_t i = 0; i < n; ++i) {
        if (w.keys[i] >= floor) bins[w.keys[i] >> 24] += measure(i);
      }
      if (top_p >= 0.0f) {
        uint64_t total = 0;
        for (uint64_t b : bins) total += b;
        need = kernels::top_p_target(top_p, total);
      }
    } else {
      for (int64_t j = 0; j < candidates; ++j) {
        const uint32_t i = w.order[j];
        if (w.keys[i] >= floor) bins[(w.keys[i] >> shift) & 255] += measure(i);
      }
    }
    uint64_t below = 0;
    int bin = 255;
    for (; bin > 0 && below + bins[bin] < need; --bin) below += bins[bin];
    need -= below;
    prefix |= uint32_t(bin) << shift;
    // The positions whose keys agree with the digits chosen so far.
    const uint32_t mask = ~uint32_t(0) << shift;
    if (shift == 24) {
      for (int64_t i = 0; i < n; ++i) {
        if ((w.keys[i] & mask) == prefix) w.order[candidates++] = uint32_t(i);
      }
    } else {
      int64_t kept = 0;
      for (int64_t j = 0; j < candidates; ++j) {
        if ((w.keys[w.order[j]] & mask) == prefix) w.order[kept++] = w.order[j];
      }
      candidates = kept;
    }
  }
  return prefix;
}

uint32_t radix_threshold(const SampleRowWork& w, int64_t n, const kernels::SampleRow& s) {
  uint32_t threshold = 0;
  if (s.top_k > 0) threshold = radix_select(w, n, 0, uint64_t(s.top_k), -1.0f, [](int64_t) { return uint64_t(1); });
  if (s.top_p < 1.0f) {
    threshold = radix_select(w, n, threshold, 0, s.top_p, [&](int64_t i) { return weight_at(w, i); });
  }
  return threshold;
}

xhal_status sample_simd(const xhal_op_call* c, char* msg, size_t len) {
  xhal_status s = XHAL_OK;
  with_element(c->dtype,
               [&]<class E>() { s = sample_rows<E>(c, msg, len, "cpu.sample_simd", simd_weights, radix_threshold); });
  return s;
}

}  // namespace xhal::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace xhal::cpu {

HWY_EXPORT(sample_simd);

namespace {
template <class E>
struct SampleSimd {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    return HWY_DYNAMIC_DISPATCH(sample_simd)(c, msg, len);
  }
};
}  // namespace

XHAL_REGISTER_KERNELS(host) { register_fast_kernels<SampleSimd>(host, "cpu.sample_simd", XHAL_OP_SAMPLE); }

}  // namespace xhal::cpu
#endif

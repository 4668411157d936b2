// sample with SIMD weights and radix-select thresholds (Highway, best target picked at run time).
// The weights are kernels/sampling.hpp's polynomial as vector operations: the same roundings as
// the scalar code only where the target fuses multiply-adds, so targets without FMA compute them
// one at a time. top-k's and top-p's thresholds come from radix selects on the keys (8-bit digits,
// the highest first) instead of the reference's sort: the first digit's pass goes over the row, the
// later ones over the positions the chosen digits still admit (gathered by vector compression). The
// row's largest value and the draw's kept weights are vector passes too (SimdRowPasses). Registered
// above cpu.sample.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/sample_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <cmath>

#include "kernels/cpu/kernel_registration.hpp"
#include "kernels/cpu/sample_rows.hpp"
#include "kernels/cpu/simd_element-inl.h"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {

template <class E>
void simd_weights(const typename E::Storage* row, int64_t n, float max, float temperature, SampleRowWork& w) {
  int64_t i = 0;
#if HWY_NATIVE_FMA
  const DF df;
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const int64_t lanes = int64_t(hn::Lanes(df));
  for (; i + lanes <= n; i += lanes) {
    const VF v = load_f32<E>(row + i);
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
  scalar_keys_and_weights<E>(row, i, n, max, temperature, w);
}

// The row passes of sample_rows in vectors, the same results as ScalarRowPasses: a largest value
// and integer sums do not depend on the order (a span's kept weight, under 1024 * 2^40, is exact in
// f64 lanes; each weight is truncated to its integer first, as weight_at does).
struct SimdRowPasses {
  template <class E>
  static float row_max(const typename E::Storage* row, int64_t n, bool* special) {
#if HWY_TARGET == HWY_SCALAR
    return ScalarRowPasses::row_max<E>(row, n, special);
#else
    const DF df;
    const int64_t lanes = int64_t(hn::Lanes(df));
    VF largest = hn::Set(df, -INFINITY), odd = hn::Zero(df);  // odd: a lane has seen a NaN or +inf
    int64_t i = 0;
    for (; i + lanes <= n; i += lanes) {
      const VF v = load_f32<E>(row + i);
      largest = hn::Max(largest, v);
      odd = hn::Or(odd, hn::VecFromMask(df, hn::Or(hn::IsNaN(v), hn::Eq(v, hn::Set(df, INFINITY)))));
    }
    bool tail_special = false;
    const float tail_max = ScalarRowPasses::row_max<E>(row + i, n - i, &tail_special);
    *special = tail_special || !hn::AllFalse(df, hn::MaskFromVec(odd));
    const float head_max = hn::GetLane(hn::MaxOfLanes(df, largest));
    return head_max > tail_max ? head_max : tail_max;
#endif
  }

  // A span of at most kDrawSpan positions (sample_draw's), whose sum the f64 lanes hold exactly.
  static uint64_t kept_weight(const SampleRowWork& w, int64_t begin, int64_t end, uint32_t threshold,
                              uint64_t min_weight) {
#if HWY_TARGET == HWY_SCALAR
    return ScalarRowPasses::kept_weight(w, begin, end, threshold, min_weight);
#else
    const DF df;
    const hn::RebindToSigned<DF> di;
    const hn::Half<DF> dh;
    const hn::Rebind<double, decltype(dh)> dd;
    const int64_t lanes = int64_t(hn::Lanes(df));
    // weight_at(i) >= min_weight exactly when the float is at least the least float >= min_weight.
    float least = float(min_weight);
    if (double(least) < double(min_weight)) least = std::nextafter(least, INFINITY);
    // Keys compare as unsigned: flipped sign bits compare the same way as signed.
    const auto flip = hn::Set(di, int32_t(0x80000000u));
    const auto threshold_flipped = hn::Xor(hn::Set(di, int32_t(threshold)), flip);
    auto sum = hn::Zero(dd);
    int64_t i = begin;
    for (; i + lanes <= end; i += lanes) {
      const auto keys = hn::Xor(hn::LoadU(di, reinterpret_cast<const int32_t*>(w.keys + i)), flip);
      const VF weights = hn::LoadU(df, w.weights + i);
      const auto kept = hn::And(hn::RebindMask(df, hn::Not(hn::Lt(keys, threshold_flipped))),
                                hn::Not(hn::Lt(weights, hn::Set(df, least))));
      const VF kept_weights = hn::Trunc(hn::IfThenElseZero(kept, weights));
      sum = hn::Add(sum, hn::Add(hn::PromoteTo(dd, hn::LowerHalf(dh, kept_weights)),
                                 hn::PromoteTo(dd, hn::UpperHalf(dh, kept_weights))));
    }
    return uint64_t(hn::GetLane(hn::SumOfLanes(dd, sum))) +
           ScalarRowPasses::kept_weight(w, i, end, threshold, min_weight);
#endif
  }
};

// The positions i < n whose key agrees with `prefix` under `mask`, in order, into order; their
// count. Vectors of keys compressed to the positions that match (vpcompressd on AVX-512), where
// the scalar loop's data-dependent store and branch made this the costliest pass of a row.
int64_t positions_matching(const uint32_t* keys, int64_t n, uint32_t prefix, uint32_t mask, uint32_t* order) {
  int64_t count = 0, i = 0;
#if HWY_TARGET != HWY_SCALAR
  const hn::ScalableTag<uint32_t> du;
  const int64_t lanes = int64_t(hn::Lanes(du));
  auto index = hn::Iota(du, 0);
  for (; i + lanes <= n; i += lanes) {
    const auto match = hn::Eq(hn::And(hn::LoadU(du, keys + i), hn::Set(du, mask)), hn::Set(du, prefix));
    // Compressed in a register, then a whole vector stored from order + count (within order[0, i +
    // lanes), as count <= i): Zen 4 runs vpcompressd to memory as a slow microcoded sequence.
    hn::StoreU(hn::Compress(index, match), du, order + count);
    count += int64_t(hn::CountTrue(du, match));
    index = hn::Add(index, hn::Set(du, uint32_t(lanes)));
  }
#endif
  for (; i < n; ++i) {
    if ((keys[i] & mask) == prefix) order[count++] = uint32_t(i);
  }
  return count;
}

// bins[digit] += measure(i) for the positions i = position(j), j in [0, count), whose keys are at
// least `floor`, where digit = (key >> shift) & 255. Four histograms, position j into j % 4's, added
// at the end: most of a row's keys share a few first digits, and one histogram made each addition
// wait for the previous one to the same bin (a store, then a load of it).
template <class Position, class Measure>
void histogram(uint64_t (&bins)[256], const uint32_t* keys, int64_t count, uint32_t floor, int shift,
               Position&& position, Measure&& measure) {
  uint64_t part[4][256] = {};
  int64_t j = 0;
  for (; j + 4 <= count; j += 4) {
    for (int u = 0; u < 4; ++u) {
      const int64_t i = position(j + u);
      if (keys[i] >= floor) part[u][(keys[i] >> shift) & 255] += measure(i);
    }
  }
  for (; j < count; ++j) {
    const int64_t i = position(j);
    if (keys[i] >= floor) part[0][(keys[i] >> shift) & 255] += measure(i);
  }
  for (int b = 0; b < 256; ++b) bins[b] = part[0][b] + part[1][b] + part[2][b] + part[3][b];
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
    if (shift == 24) {
      histogram(
          bins, w.keys, n, floor, shift, [](int64_t j) { return j; }, measure);
      if (top_p >= 0.0f) {
        uint64_t total = 0;
        for (uint64_t b : bins) total += b;
        need = kernels::top_p_target(top_p, total);
      }
    } else {
      histogram(
          bins, w.keys, candidates, floor, shift, [&](int64_t j) { return int64_t(w.order[j]); }, measure);
    }
    uint64_t below = 0;
    int bin = 255;
    for (; bin > 0 && below + bins[bin] < need; --bin) below += bins[bin];
    need -= below;
    prefix |= uint32_t(bin) << shift;
    // The positions whose keys agree with the digits chosen so far.
    const uint32_t mask = ~uint32_t(0) << shift;
    if (shift == 24) {
      candidates = positions_matching(w.keys, n, prefix, mask, w.order);
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
  with_element(c->dtype, [&]<class E>() {
    s = sample_rows<E, SimdRowPasses>(c, msg, len, "cpu.sample_simd", simd_weights<E>, radix_threshold);
  });
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

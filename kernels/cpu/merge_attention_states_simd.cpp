// merge_attention_states with SIMD (Highway, best target picked at run time): blocks of rows in
// parallel; a block's weights in one vector (kernels/attention_merge.hpp's formula, one lane a row:
// computed a row at a time, the exponential and the logarithm took most of the time of rows of 128
// values), then each row's values in vectors, a part of weight 0 left unread. Registered above the
// reference kernel.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/merge_attention_states_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <hwy/contrib/math/math-inl.h>

#include <algorithm>
#include <cstdint>

#include "kernels/attention_merge.hpp"
#include "kernels/cpu/kernel_registration.hpp"
#include "kernels/cpu/scratch.hpp"
#include "kernels/cpu/simd_element-inl.h"
#include "kernels/cpu/merge_attention_tensors.hpp"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {

// One row: o = wa a + wb b over n values, the parts whose weight is 0 left unread.
template <class E, bool kStream>
void merge_row(const typename E::Storage* a, const typename E::Storage* b, typename E::Storage* o, int64_t n,
               const kernels::MergeWeights& w) {
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df));
  const bool read_a = w.a != 0.0f, read_b = w.b != 0.0f;
  const VF wa = hn::Set(df, w.a), wb = hn::Set(df, w.b);
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    VF v = hn::Zero(df);
    if (read_a) v = hn::Mul(wa, load_f32<E>(a + i));
    if (read_b) v = hn::MulAdd(wb, load_f32<E>(b + i), v);
    store_f32<E, kStream>(v, o + i);
  }
  for (; i < n; ++i) {
    const float from_a = read_a ? w.a * E::load(a[i]) : 0.0f;
    o[i] = E::store(read_b ? w.b * E::load(b[i]) + from_a : from_a);
  }
}

// merge_weights for a vector of rows: the same cases and formula, in lanes.
void merge_weights(VF lse_a, VF lse_b, float* a, float* b, float* lse) {
  const DF df;
  const VF inf = hn::Set(df, INFINITY), nan = hn::Set(df, NAN), zero = hn::Zero(df), one = hn::Set(df, 1.0f);
  const VF m = hn::Max(lse_a, lse_b);
  const auto not_a_number = hn::Or(hn::Or(hn::IsNaN(lse_a), hn::IsNaN(lse_b)), hn::Eq(m, inf));
  const auto no_key = hn::Eq(m, hn::Neg(inf));
  // Both -inf: the difference is NaN, and no_key replaces what follows from it.
  const VF distance = hn::Min(hn::Abs(hn::Sub(lse_a, lse_b)), hn::Set(df, 3.0e38f));  // Exp takes finite values
  const VF e = hn::Exp(df, hn::Neg(distance)), larger = hn::Div(one, hn::Add(one, e)), smaller = hn::Mul(e, larger);
  const auto a_larger = hn::Ge(lse_a, lse_b);
  VF wa = hn::IfThenElse(a_larger, larger, smaller), wb = hn::IfThenElse(a_larger, smaller, larger);
  VF wl = hn::Add(m, hn::Log1p(df, e));
  wa = hn::IfThenElse(not_a_number, nan, hn::IfThenElse(no_key, zero, wa));
  wb = hn::IfThenElse(not_a_number, nan, hn::IfThenElse(no_key, zero, wb));
  wl = hn::IfThenElse(not_a_number, nan, hn::IfThenElse(no_key, hn::Neg(inf), wl));
  hn::StoreU(wa, df, a), hn::StoreU(wb, df, b), hn::StoreU(wl, df, lse);
}

// False when the allocator had no workspace to give. Work goes in tiles of Lanes() tokens by every
// head: the tile's weights head by head (its lse values are consecutive in [H, T]: one cache line
// or two per head), then its rows in memory order, then its lse head by head. Taken row by row,
// each of Lanes() rows read a value of lse_a and of lse_b from a line of its own, T floats from
// the last: at T = 16384, 64 KiB apart, all in one set of L1 and of L2, missed every time (3x
// slower than the rows' own traffic).
template <class E>
bool merge_rows_typed(const xhal_op_call* c) {
  using S = typename E::Storage;
  const MergeTensors<S> m(c);
  const int64_t T = m.out.size(0), H = m.out.size(1), D = m.out.size(2);
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df)), tiles = (T + lanes - 1) / lanes;
  if (tiles == 0 || H == 0) return true;
  // Per thread: the weights of a tile, [3][H][lanes], and a vector each of lse_a and lse_b values.
  const int64_t floats_per_lane = H > (INT64_MAX - 2) / 3 ? -1 : 3 * H + 2;  // -1: overflowed
  const ThreadWorkspaces workspaces(c, checked_bytes(checked_bytes(floats_per_lane, lanes), sizeof(float)), tiles);
  if (!workspaces.ok()) return false;
  const auto row =
      should_stream<E>(c->tensors[XHAL_MERGE_ATTENTION_STATES_OUT]) ? merge_row<E, true> : merge_row<E, false>;
#pragma omp parallel num_threads(workspaces.threads())
  {
    float* wa = static_cast<float*>(workspaces.of_this_thread());
    float *wb = wa + H * lanes, *wl = wb + H * lanes, *la = wl + H * lanes, *lb = la + lanes;
#pragma omp for schedule(static)
    for (int64_t tile = 0; tile < tiles; ++tile) {
      const int64_t t0 = tile * lanes, count = std::min(lanes, T - t0);
      for (int64_t h = 0; h < H; ++h) {
        for (int64_t i = 0; i < lanes; ++i) {  // lanes past the last token: any finite values
          la[i] = i < count ? *m.lse_a.at(h, t0 + i) : 0.0f;
          lb[i] = i < count ? *m.lse_b.at(h, t0 + i) : 0.0f;
        }
        merge_weights(hn::LoadU(df, la), hn::LoadU(df, lb), wa + h * lanes, wb + h * lanes, wl + h * lanes);
      }
      for (int64_t i = 0; i < count; ++i) {
        for (int64_t h = 0; h < H; ++h) {
          const int64_t at = h * lanes + i;
          row(m.out_a.at(t0 + i, h), m.out_b.at(t0 + i, h), m.out.at(t0 + i, h), D, {wa[at], wb[at], wl[at]});
        }
      }
      if (m.lse) {
        for (int64_t h = 0; h < H; ++h) {
          for (int64_t i = 0; i < count; ++i) *m.lse.at(h, t0 + i) = wl[h * lanes + i];
        }
      }
    }
    stream_fence();
  }
  return true;
}

bool merge_rows(const xhal_op_call* c) {
  bool ok = false;
  with_element(c->dtype, [&]<class E>() { ok = merge_rows_typed<E>(c); });
  return ok;
}

}  // namespace xhal::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace xhal::cpu {

HWY_EXPORT(merge_rows);

namespace {
template <class E>
struct MergeAttentionStatesSimd {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    if (HWY_DYNAMIC_DISPATCH(merge_rows)(c)) return XHAL_OK;
    return workspaces_refused(msg, len, "merge_attention_states");
  }
};
}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_fast_kernels<MergeAttentionStatesSimd>(host, "cpu.merge_attention_states_simd",
                                                  XHAL_OP_MERGE_ATTENTION_STATES);
}

}  // namespace xhal::cpu
#endif

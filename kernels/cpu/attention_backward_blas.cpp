// attention_backward and attention_varlen_backward on the CPU with OpenBLAS and SIMD (Highway, best
// target picked at run time). Per (sequence, kv head) pair, as the reference kernel: K and V
// converted to f32 once, dk and dv kept in f32, the query rows of the group in tiles of up to
// kRows stacked rows. Per tile of kKeys keys the five products run through sgemm, S = Q Kᵀ,
// dP = dO Vᵀ, then P = exp(scale·S − lse) and dS = scale · P ∘ (dP − delta) in vectors (masked
// entries exactly 0), dV += Pᵀ dO, dK += dSᵀ Q, dQ += dS K. Tiles no row of the query tile sees are
// skipped. A pair whose q, k, v or dout hold an infinity or a NaN is computed by the reference
// instead (sgemm multiplies the masked entries too: 0 · inf), so the gradients are NaN exactly
// where the reference's are. Softcap calls go to the reference kernel. Every sum runs in one order
// (OpenBLAS single-threaded inside the pairs' parallel loop): the same bits run to run.
// Registered above the reference kernels of attention_backward.cpp.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/attention_backward_blas.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <vector>

#include "kernels/cpu/attention_backward_pairs.hpp"
#include "kernels/cpu/blas.hpp"
#include "kernels/cpu/kernel_registration.hpp"
#include "kernels/cpu/simd_element-inl.h"
#include "kernels/cpu/simd_math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {

constexpr int64_t kRows = 128;  // stacked query rows per tile (every head of the group)
constexpr int64_t kKeys = 256;  // keys per tile
constexpr float kLog2e = 1.44269504088896341f;

// A pair's buffers (f32): its keys' K, V, dk and dv; a tile's queries, douts, dq rows, deltas and
// lse (times log2 e); the tile's S (then P) and dP (then dS); one row of out.
struct BlasBuffers {
  float *k, *v, *dk, *dv, *q, *dout, *dq, *delta, *lse, *s, *dp, *out;
  static BlasBuffers carve(Carver& c, int64_t keys, int64_t rows, int64_t D, int64_t Dv) {
    return {c.take<float>(keys, D), c.take<float>(keys, Dv),    c.take<float>(keys, D),     c.take<float>(keys, Dv),
            c.take<float>(rows, D), c.take<float>(rows, Dv),    c.take<float>(rows, D),     c.take<float>(rows),
            c.take<float>(rows),    c.take<float>(rows, kKeys), c.take<float>(rows, kKeys), c.take<float>(Dv)};
  }
};

// Rows per tile for one head: the group's heads share the kRows (at least one row each).
int64_t tile_rows(int64_t group) { return std::max<int64_t>(1, kRows / std::max<int64_t>(1, group)); }
int64_t stacked_rows(int64_t group) { return std::max<int64_t>(1, group) * tile_rows(group); }

// src[0..n) as f32 into dst; false when any value is an infinity or a NaN.
template <class E>
bool load_finite(const typename E::Storage* src, float* dst, int64_t n) {
  convert_row<E>(src, dst, n);
  // x - x is 0 for a finite x and NaN otherwise; any NaN makes the sum NaN.
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df));
  auto zeros = hn::Zero(df);
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto v = hn::LoadU(df, dst + i);
    zeros = hn::Add(zeros, hn::Sub(v, v));
  }
  float sum = hn::GetLane(hn::SumOfLanes(df, zeros));
  for (; i < n; ++i) sum += dst[i] - dst[i];
  return sum == 0.0f;
}

// One row of a tile, keys [0, jn): P over s and dS over dp, zero outside the visible keys [a, e).
void probabilities_and_gradients(float* s, float* dp, int64_t jn, int64_t a, int64_t e, float scale, float lse_log2,
                                 float delta) {
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df));
  std::fill(s, s + a, 0.0f), std::fill(dp, dp + a, 0.0f);
  std::fill(s + e, s + jn, 0.0f), std::fill(dp + e, dp + jn, 0.0f);
  const auto scale_log2 = hn::Set(df, scale * kLog2e), lse = hn::Set(df, lse_log2), dl = hn::Set(df, delta);
  const auto sc = hn::Set(df, scale), lowest = hn::Set(df, -126.0f);
  int64_t j = a;
  for (; j + lanes <= e; j += lanes) {
    const auto p = exp2_on_range<5>(hn::Max(hn::MulSub(hn::LoadU(df, s + j), scale_log2, lse), lowest));
    hn::StoreU(p, df, s + j);
    hn::StoreU(hn::Mul(hn::Mul(p, hn::Sub(hn::LoadU(df, dp + j), dl)), sc), df, dp + j);
  }
  for (; j < e; ++j) {
    const float p = std::exp2(std::max(s[j] * scale * kLog2e - lse_log2, -126.0f));
    s[j] = p;
    dp[j] = p * (dp[j] - delta) * scale;
  }
}

// The pair's gradients through sgemm; false (some of dq written) when an input was not finite.
template <class E>
bool blas_pair(const BackwardCall<typename E::Storage>& call, int64_t b, int64_t h, const BlasBuffers& w) {
  const AttentionRows<typename E::Storage>& at = call.at;
  const MaskParams& mask = call.mask;
  const int64_t group = call.group, D = call.D, Dv = call.Dv, hq0 = h * group, rows = tile_rows(group);
  const int64_t Sq = at.seqs[size_t(b)].Sq, Sk = at.seqs[size_t(b)].Sk;
  for (int64_t j = 0; j < Sk; ++j) {
    if (!load_finite<E>(at.key(b, j, h), w.k + j * D, D) || !load_finite<E>(at.value(b, j, h), w.v + j * Dv, Dv)) {
      return false;
    }
  }
  std::fill(w.dk, w.dk + Sk * D, 0.0f);
  std::fill(w.dv, w.dv + Sk * Dv, 0.0f);
  for (int64_t i0 = 0; i0 < Sq; i0 += rows) {
    const int64_t i1 = std::min(Sq, i0 + rows), m = i1 - i0, n = group * m;  // row r = g * m + i - i0
    for (int64_t g = 0; g < group; ++g) {
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t r = g * m + i - i0;
        if (!load_finite<E>(at.query(b, i, hq0 + g), w.q + r * D, D) ||
            !load_finite<E>(at.query_row_of(call.dout, b, i, hq0 + g), w.dout + r * Dv, Dv)) {
          return false;
        }
        w.delta[r] = delta_of<E>(call, b, i, hq0 + g, w.dout + r * Dv, w.out);
        w.lse[r] = *at.lse_of(b, i, hq0 + g) * kLog2e;
      }
    }
    std::fill(w.dq, w.dq + n * D, 0.0f);
    int64_t lo_all, hi_all;
    mask.visible_range_of_rows(i0, i1, Sq, Sk, &lo_all, &hi_all);
    for (int64_t j0 = lo_all; j0 < hi_all; j0 += kKeys) {
      const int64_t jn = std::min(kKeys, hi_all - j0);
      gemm_nt(n, jn, D, w.q, D, w.k + j0 * D, D, w.s, jn, false);
      gemm_nt(n, jn, Dv, w.dout, Dv, w.v + j0 * Dv, Dv, w.dp, jn, false);
      for (int64_t i = i0; i < i1; ++i) {
        int64_t lo, hi;
        mask.visible_range(i, Sq, Sk, &lo, &hi);
        const int64_t a = std::clamp(lo - j0, int64_t(0), jn), e = std::clamp(hi - j0, a, jn);
        for (int64_t g = 0; g < group; ++g) {
          const int64_t r = g * m + i - i0;
          probabilities_and_gradients(w.s + r * jn, w.dp + r * jn, jn, a, e, mask.scale, w.lse[r], w.delta[r]);
        }
      }
      gemm_tn(jn, Dv, n, w.s, jn, w.dout, Dv, w.dv + j0 * Dv, Dv, true);
      gemm_tn(jn, D, n, w.dp, jn, w.q, D, w.dk + j0 * D, D, true);
      gemm_nn(n, D, jn, w.dp, jn, w.k + j0 * D, D, w.dq, D, true);
    }
    for (int64_t g = 0; g < group; ++g) {
      for (int64_t i = i0; i < i1; ++i) {
        store_row<E>(w.dq + (g * m + i - i0) * D, at.query_row_of(call.dq, b, i, hq0 + g), D);
      }
    }
  }
  for (int64_t j = 0; j < Sk; ++j) {
    store_row<E>(w.dk + j * D, at.key_row_of(call.dk, b, j, h), D);
    store_row<E>(w.dv + j * Dv, at.key_row_of(call.dv, b, j, h), Dv);
  }
  return true;
}

// A thread's workspace serves the BLAS buffers and, for a pair with non-finite inputs, the
// reference's (one after the other, from the same bytes).
xhal_status attention_backward_blas(const xhal_op_call* c, const std::vector<SequenceSpan>& seqs, bool batched,
                                    char* msg, size_t len) {
  xhal_status status = XHAL_OK;
  with_element(c->dtype, [&]<class E>() {
    using S = typename E::Storage;
    status = run_backward_pairs<E>(
        c, seqs, batched,
        [](const BackwardCall<S>& call, int64_t max_keys) {
          Carver blas;
          BlasBuffers::carve(blas, max_keys, stacked_rows(call.group), call.D, call.Dv);
          return std::max(blas.bytes(), ReferenceBuffers::bytes(max_keys, call.group * kQueryTile, call.D, call.Dv));
        },
        [](const BackwardCall<S>& call, int64_t b, int64_t h, void* workspace, int64_t max_keys) {
          Carver blas(workspace);
          if (blas_pair<E>(call, b, h, BlasBuffers::carve(blas, max_keys, stacked_rows(call.group), call.D, call.Dv))) {
            return;
          }
          Carver reference(workspace);
          reference_pair<E>(call, b, h,
                            ReferenceBuffers::carve(reference, max_keys, call.group * kQueryTile, call.D, call.Dv));
        },
        msg, len);
  });
  return status;
}

}  // namespace xhal::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace xhal::cpu {

HWY_EXPORT(attention_backward_blas);

namespace {
template <class E>
struct AttentionBackwardBlas {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    return HWY_DYNAMIC_DISPATCH(attention_backward_blas)(c, batched_spans(c), true, msg, len);
  }
};

template <class E>
struct AttentionVarlenBackwardBlas {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    std::vector<SequenceSpan> seqs;
    if (const xhal_status s = varlen_spans(c, msg, len, &seqs); s != XHAL_OK) return s;
    return HWY_DYNAMIC_DISPATCH(attention_backward_blas)(c, seqs, false, msg, len);
  }
};

const char* blas_backward_supports(void*, const xhal_op_call* c) {
  return kernels::op_params<xhal_attention_op_params>(c).softcap > 0.0f ? "softcap (the reference kernel has it)"
                                                                        : nullptr;
}
}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_fast_kernels<AttentionBackwardBlas>(host, "cpu.attention_backward_blas", XHAL_OP_ATTENTION_BACKWARD,
                                               blas_backward_supports);
  register_fast_kernels<AttentionVarlenBackwardBlas>(host, "cpu.attention_varlen_backward_blas",
                                                     XHAL_OP_ATTENTION_VARLEN_BACKWARD, blas_backward_supports);
}

}  // namespace xhal::cpu
#endif

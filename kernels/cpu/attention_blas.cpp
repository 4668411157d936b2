// attention and attention_varlen on the CPU with OpenBLAS and SIMD (Highway, best target picked at
// run time): FlashAttention-2's loop with both matrix products through sgemm. A task (sequence,
// kv head, up to kMaxRows query rows shared among the group's query heads, stacked, as many as fit
// in L2 with a tile's keys) converts its queries to f32 once, pre-scaled by scale * log2(e) so the
// softmax works in base 2; then for each tile of kKeys keys it converts K and V to f32 once for
// the whole group (GQA), computes S = Q Kᵀ (sgemm), masks it and runs the online softmax in
// vectors (running max and sum per row; the accumulator is rescaled when the max moves), and adds
// P V to the accumulator (sgemm). Tiles outside every row's visible keys (causal, window) are
// skipped. Tasks run in parallel with OpenMP, largest first; inside them OpenBLAS (its OpenMP
// build) runs on the calling thread. Registered above the reference kernels of attention.cpp.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/attention_blas.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/attention_core.hpp"
#include "kernels/cpu/attention_softmax-inl.h"
#include "kernels/cpu/attention_tasks.hpp"
#include "kernels/cpu/blas.hpp"
#include "kernels/cpu/cache_size.hpp"
#include "kernels/cpu/simd_element-inl.h"
#include "kernels/cpu/simd_math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {

// Query rows per task, all heads of the group together: the more, the more each packed K and V
// tile is reused by sgemm (on a 2-vCPU Xeon with 2 MiB of L2, full f32 attention at D = 128 ran at
// 0.48 of the sgemm rate with 64 rows, 0.57 with 128 and 0.65 with 256; docs/kernel-notes.md).
constexpr int64_t kMaxRows = 256, kMinRows = 32;
constexpr int64_t kKeys = 256;  // keys per tile

// A thread's buffers, reused from task to task.
struct Workspace {
  std::vector<float> q, k, v, s, acc, m, l;
};

// Query rows [i0, i1) of every query head of one kv head's group (accessors as in
// attention_tasks.hpp).
template <class E, class Q, class K, class V, class O, class L>
void attend_tile_blas(int64_t group, int64_t i0, int64_t i1, int64_t Sq, int64_t Sk, int64_t D, int64_t Dv,
                      const MaskParams& mask, Q q, K k, V v, O out, L lse, Workspace& w) {
  const int64_t rows = i1 - i0, n = group * rows;  // row r = g * rows + (i - i0)
  w.q.resize(size_t(n * D));
  w.k.resize(size_t(kKeys * D));
  w.v.resize(size_t(kKeys * Dv));
  w.s.resize(size_t(n * kKeys));
  w.acc.assign(size_t(n * Dv), 0.0f);
  w.m.assign(size_t(n), -std::numeric_limits<float>::infinity());
  w.l.assign(size_t(n), 0.0f);
  const float q_scale = mask.softcap > 0.0f ? mask.scale : mask.scale * kLog2e;
  for (int64_t g = 0; g < group; ++g) {
    for (int64_t i = i0; i < i1; ++i) convert_row<E>(q(g, i), &w.q[size_t((g * rows + i - i0) * D)], D, q_scale);
  }
  int64_t lo_all, hi_all;
  mask.visible_range_of_rows(i0, i1, Sq, Sk, &lo_all, &hi_all);
  for (int64_t j0 = lo_all; j0 < hi_all; j0 += kKeys) {
    const int64_t jn = std::min(kKeys, hi_all - j0);
    for (int64_t j = 0; j < jn; ++j) {
      convert_row<E>(k(j0 + j), &w.k[size_t(j * D)], D, 1.0f);
      convert_row<E>(v(j0 + j), &w.v[size_t(j * Dv)], Dv, 1.0f);
    }
    gemm_nt(n, jn, D, w.q.data(), D, w.k.data(), D, w.s.data(), jn, false);
    softmax_rows<F32>(mask, i0, rows, n, Sq, Sk, j0, jn, jn, w.s.data(), w.s.data(), jn, 1.0f, w.m.data(), w.l.data(),
                      w.acc.data(), Dv, Dv);
    gemm_nn(n, Dv, jn, w.s.data(), jn, w.v.data(), Dv, w.acc.data(), Dv, true);
  }
  for (int64_t r = 0; r < n; ++r) {
    const int64_t g = r / rows, i = i0 + r % rows;
    finish_row<E>(&w.acc[size_t(r * Dv)], w.l[size_t(r)], w.m[size_t(r)], Dv, out(g, i), lse(g, i));
  }
}

// Rows per task (the group's heads together): the most, halving from kMaxRows down to kMinRows,
// whose working set (f32 queries, scores and accumulators, plus a tile of K and V) fits in L2.
int64_t task_rows(const xhal_op_call* c) {
  const int64_t D = c->t[XHAL_SLOT_Q]->shape[c->t[XHAL_SLOT_Q]->ndim - 1];
  const int64_t Dv = c->t[XHAL_SLOT_V]->shape[c->t[XHAL_SLOT_V]->ndim - 1];
  const auto bytes = [&](int64_t n) { return int64_t(sizeof(float)) * (n * (D + kKeys + Dv) + kKeys * (D + Dv)); };
  int64_t n = kMaxRows;
  while (n > kMinRows && bytes(n) > l2_cache_bytes()) n /= 2;
  return n;
}

void attention_blas(const xhal_op_call* c, const std::vector<SequenceSpan>& seqs, bool batched) {
  const MaskParams mask = MaskParams::from(c->params);
  const int64_t rows = std::max<int64_t>(8, task_rows(c) / std::max<int64_t>(1, query_group(c)));
  with_element(c->dtype, [&]<class E>() {
    for_each_attention_task<typename E::Storage>(
        seqs, batched, c, rows,
        [&](int64_t g, int64_t i0, int64_t i1, int64_t Sq, int64_t Sk, int64_t D, int64_t Dv, auto q, auto k,
            auto v, auto out, auto lse) {
          thread_local Workspace w;
          attend_tile_blas<E>(g, i0, i1, Sq, Sk, D, Dv, mask, q, k, v, out, lse, w);
        });
  });
}

}  // namespace xhal::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace xhal::cpu {

HWY_EXPORT(attention_blas);

namespace {
template <class E>
struct AttentionBlas {
  static xhal_status run(const xhal_op_call* c, char*, size_t) {
    HWY_DYNAMIC_DISPATCH(attention_blas)(c, batched_spans(c), true);
    return XHAL_OK;
  }
};

template <class E>
struct AttentionVarlenBlas {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    std::vector<SequenceSpan> seqs;
    if (const xhal_status s = varlen_spans(c, msg, len, &seqs); s != XHAL_OK) return s;
    HWY_DYNAMIC_DISPATCH(attention_blas)(c, seqs, false);
    return XHAL_OK;
  }
};
}  // namespace

void register_attention_blas_kernels(const xhal_host_api* host) {
  register_fast_kernels<AttentionBlas>(host, "cpu.attention_blas", XHAL_OP_ATTENTION);
  register_fast_kernels<AttentionVarlenBlas>(host, "cpu.attention_varlen_blas", XHAL_OP_ATTENTION_VARLEN);
}

}  // namespace xhal::cpu
#endif

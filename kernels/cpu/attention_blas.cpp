// attention, attention_varlen and paged_prefill on the CPU with OpenBLAS and SIMD (Highway, best target picked at
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
#include "kernels/cpu/scratch.hpp"
#include "kernels/cpu/simd_element-inl.h"
#include "kernels/cpu/simd_math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {

// Query rows per task, all heads of the group together: the more, the more each packed K and V
// tile is reused by sgemm (on a 2-vCPU Xeon with 2 MiB of L2, full f32 attention at D = 128 ran at
// 0.48 of the sgemm rate with 64 rows, 0.57 with 128 and 0.65 with 256; docs/journal/kernel-notes.md).
constexpr int64_t kMaxRows = 256, kMinRows = 32;
constexpr int64_t kKeys = 256;  // keys per tile

// A thread's buffers for tasks of up to n rows and tiles of `keys` keys, carved from its workspace
// (scratch.hpp): f32 queries, a tile of K and V, scores, accumulators, running max and sum.
struct Workspace {
  float *q, *k, *v, *s, *acc, *m, *l;
  int64_t keys;
  static Workspace carve(Carver& c, int64_t n, int64_t keys, int64_t D, int64_t Dv) {
    return {c.take<float>(n, D),  c.take<float>(keys, D), c.take<float>(keys, Dv), c.take<float>(n, keys),
            c.take<float>(n, Dv), c.take<float>(n),       c.take<float>(n),        keys};
  }
};

// Query rows [i0, i1) of every query head of one kv head's group (accessors as in
// attention_tasks.hpp).
template <class E, class Q, class K, class V, class O, class L>
void attend_tile_blas(int64_t group, int64_t i0, int64_t i1, int64_t Sq, int64_t Sk, int64_t D, int64_t Dv,
                      const MaskParams& mask, Q q, K k, V v, O out, L lse, const Workspace& w) {
  const int64_t rows = i1 - i0, n = group * rows;  // row r = g * rows + (i - i0)
  std::fill(w.acc, w.acc + n * Dv, 0.0f);
  std::fill(w.m, w.m + n, -std::numeric_limits<float>::infinity());
  std::fill(w.l, w.l + n, 0.0f);
  const float q_scale = mask.softcap > 0.0f ? mask.scale : mask.scale * kLog2e;
  for (int64_t g = 0; g < group; ++g) {
    for (int64_t i = i0; i < i1; ++i) convert_row<E>(q(g, i), w.q + (g * rows + i - i0) * D, D, q_scale);
  }
  int64_t lo_all, hi_all;
  mask.visible_range_of_rows(i0, i1, Sq, Sk, &lo_all, &hi_all);
  for (int64_t j0 = lo_all; j0 < hi_all; j0 += w.keys) {
    const int64_t jn = std::min(w.keys, hi_all - j0);
    for (int64_t j = 0; j < jn; ++j) {
      convert_row<E>(k(j0 + j), w.k + j * D, D, 1.0f);
      convert_row<E>(v(j0 + j), w.v + j * Dv, Dv, 1.0f);
    }
    gemm_nt(n, jn, D, w.q, D, w.k, D, w.s, jn, false);
    const bool masked =
        softmax_rows<F32>(mask, i0, rows, n, Sq, Sk, j0, jn, jn, w.s, w.s, jn, 1.0f, w.m, w.l, w.acc, Dv, Dv);
    const auto v_row = [&](int64_t j) { return w.v + j * Dv; };
    if (masked && any_non_finite<F32>(v_row, jn, Dv)) {
      pv_of_visible_keys<F32, F32>(mask, i0, rows, n, Sq, Sk, j0, jn, w.s, jn, v_row, Dv, w.acc, Dv);
    } else {
      gemm_nn(n, Dv, jn, w.s, jn, w.v, Dv, w.acc, Dv, true);
    }
  }
  for (int64_t r = 0; r < n; ++r) {
    const int64_t g = r / rows, i = i0 + r % rows;
    finish_row<E>(w.acc + r * Dv, w.l[r], w.m[r], Dv, out(g, i), lse(g, i));
  }
}

// Rows per task (the group's heads together): the most, halving from kMaxRows down to kMinRows,
// whose working set (f32 queries, scores and accumulators, plus a tile of K and V) fits in L2.
int64_t task_rows(const xhal_op_call* c) {
  const int64_t D = c->tensors[XHAL_ATTENTION_Q]->shape[c->tensors[XHAL_ATTENTION_Q]->ndim - 1];
  const int64_t Dv = c->tensors[XHAL_ATTENTION_V]->shape[c->tensors[XHAL_ATTENTION_V]->ndim - 1];
  const auto bytes = [&](int64_t n) { return int64_t(sizeof(float)) * (n * (D + kKeys + Dv) + kKeys * (D + Dv)); };
  int64_t n = kMaxRows;
  while (n > kMinRows && bytes(n) > l2_cache_bytes()) n /= 2;
  return n;
}

// False when the allocator had no workspaces to give (*workspace_bytes: what one thread needed).
bool attention_blas(const xhal_op_call* c, const std::vector<SequenceSpan>& seqs, bool batched,
                    int64_t* workspace_bytes) {
  const MaskParams mask = MaskParams::from(c->params);
  const int64_t rows = std::max<int64_t>(8, task_rows(c) / std::max<int64_t>(1, query_group(c)));
  bool ok = true;
  with_element(c->dtype, [&]<class E>() {
    const AttentionRows<typename E::Storage> at(c, seqs, batched);
    const auto tasks = all_attention_tasks(at, rows);
    const int64_t n = at.q.size(-2) == 0 ? 0 : at.group() * tasks.max_rows(), D = at.q.size(-1), Dv = at.v.size(-1);
    const int64_t keys = std::clamp<int64_t>(tasks.max_keys(), 1, kKeys);
    Carver sizing;
    Workspace::carve(sizing, n, keys, D, Dv);
    *workspace_bytes = sizing.bytes();
    const ThreadWorkspaces workspaces(c, sizing.bytes(), tasks.count());
    if (!(ok = workspaces.ok())) return;
    tasks.run(workspaces.threads(), [&](int64_t, int64_t g, int64_t i0, int64_t i1, int64_t Sq, int64_t Sk, int64_t,
                                        int64_t, auto q, auto k, auto v, auto out, auto lse) {
      Carver carver(workspaces.of_this_thread());
      attend_tile_blas<E>(g, i0, i1, Sq, Sk, D, Dv, mask, q, k, v, out, lse, Workspace::carve(carver, n, keys, D, Dv));
    });
  });
  return ok;
}

}  // namespace xhal::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace xhal::cpu {

HWY_EXPORT(attention_blas);

namespace {
xhal_status run_blas(const xhal_op_call* c, const std::vector<SequenceSpan>& seqs, char* msg, size_t len) {
  int64_t bytes = 0;
  if (HWY_DYNAMIC_DISPATCH(attention_blas)(c, seqs, c->op == XHAL_OP_ATTENTION, &bytes)) return XHAL_OK;
  return workspaces_refused(msg, len, forward_op_name(c), bytes);
}

template <class E>
struct AttentionBlas {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    std::vector<SequenceSpan> seqs;
    if (const xhal_status s = forward_spans(c, msg, len, &seqs); s != XHAL_OK) return s;
    return run_blas(c, seqs, msg, len);
  }
};
}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_fast_kernels<AttentionBlas>(host, "cpu.attention_blas", XHAL_OP_ATTENTION);
  register_fast_kernels<AttentionBlas>(host, "cpu.attention_varlen_blas", XHAL_OP_ATTENTION_VARLEN);
  register_fast_kernels<AttentionBlas>(host, "cpu.paged_prefill_blas", XHAL_OP_PAGED_PREFILL);
}

}  // namespace xhal::cpu
#endif

// What every attention kernel needs to know about a call: the mask rules, the sequences (dense
// batch or varlen spans) and the strides of q, k, v, out and lse.
#pragma once

#include <cstdint>

#include "launch.cuh"

namespace xhal::gpu {

struct Mask {
  float scale, softcap;
  bool causal;
  int64_t window_left, window_right;

  static Mask from(const void* params) {  // an op call's xhal_attention_op_params
    const auto& p = *static_cast<const xhal_attention_op_params*>(params);
    return {p.scale, p.softcap, p.causal != 0, p.window_left, p.window_right};
  }
  // Keys [lo, hi) query i of Sq may see among Sk keys (bottom-right aligned).
  __device__ void visible(int64_t i, int64_t Sq, int64_t Sk, int64_t* lo, int64_t* hi) const {
    const int64_t diag = i + Sk - Sq;
    int64_t l = window_left >= 0 ? diag - window_left : 0, h = Sk;
    if (causal) h = h < diag + 1 ? h : diag + 1;
    if (window_right >= 0) h = h < diag + window_right + 1 ? h : diag + window_right + 1;
    *lo = l > 0 ? l : 0;
    *hi = h > *lo ? h : *lo;
  }
  // Query rows [lo, hi) of Sq that see key j of Sk: the inverse of visible().
  __device__ void seen_by(int64_t j, int64_t Sq, int64_t Sk, int64_t* lo, int64_t* hi) const {
    const int64_t off = Sk - Sq;  // row i's diagonal key is i + off
    // j <= i + off + right, where causal means right = 0 (a window's right side is then >= 0).
    const int64_t right = causal ? 0 : window_right;
    int64_t l = right >= 0 ? j - off - right : 0, h = window_left >= 0 ? j - off + window_left + 1 : Sq;
    *lo = l > 0 ? l : 0;
    h = h < Sq ? h : Sq;
    *hi = h > *lo ? h : *lo;
  }
};

// Strides of q, k, v, out, lse with a batch dim (dense) or without (varlen: batch stride 0); a
// paged cache's k and v strides are its block, slot and head strides.
struct AttnLayout {
  int64_t q[3], k[3], v[3], o[3];  // batch, seq, head strides
  int64_t lse[3];  // batch, head, row strides
  int64_t Hq, group, D, Dv;
};

inline AttnLayout layout_of(const xhal_op_call* c, bool batched) {
  AttnLayout a{};
  auto fill = [&](int64_t* out, const DLTensor* t) {
    const int off = batched ? 1 : 0;
    out[0] = batched ? t->strides[0] : 0;
    out[1] = t->strides[off];
    out[2] = t->strides[off + 1];
  };
  fill(a.q, c->tensors[XHAL_ATTENTION_Q]);
  if (c->op == XHAL_OP_PAGED_PREFILL) {
    // The caches [num_blocks, block_size, Hkv, D]: block, slot and head strides.
    for (int d = 0; d < 3; ++d) {
      a.k[d] = c->tensors[XHAL_PAGED_PREFILL_K_CACHE]->strides[d];
      a.v[d] = c->tensors[XHAL_PAGED_PREFILL_V_CACHE]->strides[d];
    }
  } else {
    fill(a.k, c->tensors[XHAL_ATTENTION_K]);
    fill(a.v, c->tensors[XHAL_ATTENTION_V]);
  }
  fill(a.o, c->tensors[XHAL_ATTENTION_OUT]);
  if (const DLTensor* lse = c->tensors[XHAL_ATTENTION_LSE]) {
    if (batched) {
      a.lse[0] = lse->strides[0], a.lse[1] = lse->strides[1], a.lse[2] = lse->strides[2];
    } else {
      a.lse[0] = 0, a.lse[1] = lse->strides[0], a.lse[2] = lse->strides[1];
    }
  }
  const DLTensor* q = c->tensors[XHAL_ATTENTION_Q];
  a.Hq = q->shape[q->ndim - 2];
  const DLTensor *k = c->tensors[XHAL_ATTENTION_K], *v = c->tensors[XHAL_ATTENTION_V];
  a.group = a.Hq / k->shape[k->ndim - 2];
  a.D = q->shape[q->ndim - 1];
  a.Dv = v->shape[v->ndim - 1];
  return a;
}

// Sequence b: query rows [q_begin, q_begin + Sq), keys [k_begin, k_begin + Sk). For dense
// attention every sequence has the same lengths; for varlen they come from cu_seqlens; for
// paged_prefill the keys are the cache's first seq_lens[b] (clamped to 0..Sk, what the block table
// addresses).
struct Sequences {
  const int32_t* cu_q;  // nullptr: dense
  const int32_t* cu_k;  // nullptr with cu_q: paged
  const int32_t* lens;
  int64_t batch, Sq, Sk;
  int64_t lens_stride = 1;
  __device__ void span(int64_t b, int64_t* q_begin, int64_t* sq, int64_t* k_begin, int64_t* sk) const {
    if (cu_q == nullptr) {
      *q_begin = 0, *sq = Sq, *k_begin = 0, *sk = Sk;
    } else if (cu_k == nullptr) {
      const int64_t L = lens[b * lens_stride];
      *q_begin = cu_q[b], *sq = cu_q[b + 1] - cu_q[b], *k_begin = 0, *sk = L < 0 ? 0 : (L > Sk ? Sk : L);
    } else {
      *q_begin = cu_q[b], *sq = cu_q[b + 1] - cu_q[b], *k_begin = cu_k[b], *sk = cu_k[b + 1] - cu_k[b];
    }
  }
};

// paged_prefill's block table as the flash kernels read it (table null: dense k and v). Key j of
// sequence b lies in block table[b][j / block_size] at slot j % block_size.
struct KeyPages {
  const int32_t* table = nullptr;
  int64_t table_row = 0, num_blocks = 0;
  int block_size = 0;
  __device__ int64_t block_of(int64_t b, int64_t key) const { return table[b * table_row + key / block_size]; }
  // Key `key`'s row of head `head` in a cache with block, slot and head strides s; nullptr when the
  // table names a block outside the cache.
  template <class T>
  __device__ const T* row(const T* cache, const int64_t (&s)[3], int64_t b, int64_t key, int64_t head) const {
    const int64_t block = block_of(b, key);
    if (block < 0 || block >= num_blocks) return nullptr;
    return cache + block * s[0] + (key % block_size) * s[1] + head * s[2];
  }
};

inline KeyPages key_pages(const xhal_op_call* c) {
  if (c->op != XHAL_OP_PAGED_PREFILL) return {};
  const DLTensor *table = c->tensors[XHAL_PAGED_PREFILL_BLOCK_TABLE], *kc = c->tensors[XHAL_PAGED_PREFILL_K_CACHE];
  return {static_cast<const int32_t*>(table->data), table->strides[0], kc->shape[0], int(kc->shape[1])};
}

// The rows an attention launch covers: batched [B,S,H,D] tensors with equal lengths, or packed
// varlen tensors whose sequences come from cu_seqlens (rows per sequence up to max_seqlen_q).
struct AttnProblem {
  bool batched;
  Sequences seqs;
  int64_t max_rows;
};

inline AttnProblem dense_problem(const xhal_op_call* c) {
  const DLTensor* q = c->tensors[XHAL_ATTENTION_Q];
  return {
      true, {nullptr, nullptr, nullptr, q->shape[0], q->shape[1], c->tensors[XHAL_ATTENTION_K]->shape[1]}, q->shape[1]};
}

inline AttnProblem varlen_problem(const xhal_op_call* c) {
  return {false,
          {static_cast<const int32_t*>(c->tensors[XHAL_ATTENTION_VARLEN_CU_SEQLENS_Q]->data),
           static_cast<const int32_t*>(c->tensors[XHAL_ATTENTION_VARLEN_CU_SEQLENS_K]->data), nullptr,
           c->tensors[XHAL_ATTENTION_VARLEN_CU_SEQLENS_Q]->shape[0] - 1, 0, 0},
          kernels::op_params<xhal_attention_op_params>(c).max_seqlen_q};
}

// paged_prefill: varlen queries; keys up to max_seqlen_k (max_blocks * block_size, the front
// end's) a sequence.
inline AttnProblem paged_problem(const xhal_op_call* c) {
  const xhal_attention_op_params& p = kernels::op_params<xhal_attention_op_params>(c);
  return {false,
          {static_cast<const int32_t*>(c->tensors[XHAL_PAGED_PREFILL_CU_SEQLENS_Q]->data), nullptr,
           static_cast<const int32_t*>(c->tensors[XHAL_PAGED_PREFILL_SEQ_LENS]->data),
           c->tensors[XHAL_PAGED_PREFILL_CU_SEQLENS_Q]->shape[0] - 1, 0, p.max_seqlen_k,
           c->tensors[XHAL_PAGED_PREFILL_SEQ_LENS]->strides[0]},
          p.max_seqlen_q};
}

}  // namespace xhal::gpu

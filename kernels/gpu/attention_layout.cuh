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

// Strides of q, k, v, out, lse with a batch dim (dense) or without (varlen: batch stride 0).
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
  fill(a.k, c->tensors[XHAL_ATTENTION_K]);
  fill(a.v, c->tensors[XHAL_ATTENTION_V]);
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
  a.group = a.Hq / c->tensors[XHAL_ATTENTION_K]->shape[q->ndim - 2];
  a.D = q->shape[q->ndim - 1];
  a.Dv = c->tensors[XHAL_ATTENTION_V]->shape[q->ndim - 1];
  return a;
}

// Sequence b: query rows [q_begin, q_begin + Sq), keys [k_begin, k_begin + Sk). For dense
// attention every sequence has the same lengths; for varlen they come from cu_seqlens.
struct Sequences {
  const int32_t* cu_q;  // nullptr: dense
  const int32_t* cu_k;
  int64_t batch, Sq, Sk;
  __device__ void span(int64_t b, int64_t* q_begin, int64_t* sq, int64_t* k_begin, int64_t* sk) const {
    if (cu_q == nullptr) {
      *q_begin = 0, *sq = Sq, *k_begin = 0, *sk = Sk;
    } else {
      *q_begin = cu_q[b], *sq = cu_q[b + 1] - cu_q[b], *k_begin = cu_k[b], *sk = cu_k[b + 1] - cu_k[b];
    }
  }
};

// The rows an attention launch covers: batched [B,S,H,D] tensors with equal lengths, or packed
// varlen tensors whose sequences come from cu_seqlens (rows per sequence up to max_seqlen_q).
struct AttnProblem {
  bool batched;
  Sequences seqs;
  int64_t max_rows;
};

inline AttnProblem dense_problem(const xhal_op_call* c) {
  const DLTensor* q = c->tensors[XHAL_ATTENTION_Q];
  return {true, {nullptr, nullptr, q->shape[0], q->shape[1], c->tensors[XHAL_ATTENTION_K]->shape[1]}, q->shape[1]};
}

inline AttnProblem varlen_problem(const xhal_op_call* c) {
  return {false,
          {static_cast<const int32_t*>(c->tensors[XHAL_ATTENTION_VARLEN_CU_SEQLENS_Q]->data),
           static_cast<const int32_t*>(c->tensors[XHAL_ATTENTION_VARLEN_CU_SEQLENS_K]->data),
           c->tensors[XHAL_ATTENTION_VARLEN_CU_SEQLENS_Q]->shape[0] - 1, 0, 0},
          kernels::op_params<xhal_attention_op_params>(c).max_seqlen_q};
}

}  // namespace xhal::gpu

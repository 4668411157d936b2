// attention_backward on the CPU, one (sequence, kv head) pair at a time: what the reference kernel
// (attention_backward.cpp) and the BLAS one (attention_backward_blas.cpp) share. A pair keeps its
// keys' dk and dv in f32 (memory of the order of its K and V, no Sq x Sk buffer) and walks the query
// rows of its group in tiles. reference_pair is the reference computation: for each tile it
// recomputes the probabilities from q, k and the forward's lse, adds Pᵀ dout to dv and
// scale · dSᵀ q to dk, and writes dq = scale · dS k, with dS = P ∘ (dout vᵀ − rowsum(dout ∘ out))
// (times the softcap's derivative); masked pairs are never multiplied. Every sum runs in one order:
// the same bits run to run.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "attention_core.hpp"
#include "attention_tasks.hpp"

namespace xhal::cpu {

// What every pair reads and writes.
template <class S>
struct BackwardCall {
  const AttentionRows<S>& at;
  TensorRef<const S> dout;
  TensorRef<S> dq, dk, dv;
  MaskParams mask;
  int64_t group, D, Dv;

  BackwardCall(const xhal_op_call* c, const AttentionRows<S>& rows)
      : at(rows),
        dout(c->tensors[XHAL_ATTENTION_BACKWARD_DOUT]),
        dq(c->tensors[XHAL_ATTENTION_BACKWARD_DQ]),
        dk(c->tensors[XHAL_ATTENTION_BACKWARD_DK]),
        dv(c->tensors[XHAL_ATTENTION_BACKWARD_DV]),
        mask(MaskParams::from(c->params)),
        group(rows.group()),
        D(rows.q.size(-1)),
        Dv(rows.v.size(-1)) {}
};

// reference_pair's buffers (f32): dk and dv of its keys; a tile's queries, douts, dq rows, deltas
// and lse for group * kQueryTile rows; a tile of K and V; one row of out.
struct ReferenceBuffers {
  float *dk, *dv, *q, *dout, *dq, *delta, *lse, *k, *v, *out;
  static ReferenceBuffers carve(Carver& c, int64_t keys, int64_t rows, int64_t D, int64_t Dv) {
    return {c.take<float>(keys, D),      c.take<float>(keys, Dv), c.take<float>(rows, D), c.take<float>(rows, Dv),
            c.take<float>(rows, D),      c.take<float>(rows),     c.take<float>(rows),    c.take<float>(kKeyTile, D),
            c.take<float>(kKeyTile, Dv), c.take<float>(Dv)};
  }
  static int64_t bytes(int64_t keys, int64_t rows, int64_t D, int64_t Dv) {
    Carver c;
    carve(c, keys, rows, D, Dv);
    return c.bytes();
  }
};

inline float dot(const float* a, const float* b, int64_t n) {
  float s = 0.0f;
#pragma omp simd reduction(+ : s)
  for (int64_t d = 0; d < n; ++d) s += a[d] * b[d];
  return s;
}

inline void axpy(float a, const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t d = 0; d < n; ++d) y[d] += a * x[d];
}

// rowsum(dout ∘ out) of query row i of head hq (dout already in f32; out_row: scratch of Dv floats).
template <class E, class S>
float delta_of(const BackwardCall<S>& call, int64_t b, int64_t i, int64_t hq, const float* dout, float* out_row) {
  load_row<E>(call.at.output(b, i, hq), out_row, call.Dv);
  return dot(dout, out_row, call.Dv);
}

template <class E>
void reference_pair(const BackwardCall<typename E::Storage>& call, int64_t b, int64_t h, const ReferenceBuffers& w) {
  const AttentionRows<typename E::Storage>& at = call.at;
  const MaskParams& mask = call.mask;
  const int64_t group = call.group, D = call.D, Dv = call.Dv, hq0 = h * group;
  const int64_t Sq = at.seqs[size_t(b)].Sq, Sk = at.seqs[size_t(b)].Sk;
  std::fill(w.dk, w.dk + Sk * D, 0.0f);
  std::fill(w.dv, w.dv + Sk * Dv, 0.0f);
  for (int64_t i0 = 0; i0 < Sq; i0 += kQueryTile) {
    const int64_t i1 = std::min(Sq, i0 + kQueryTile), n = i1 - i0;
    for (int64_t g = 0; g < group; ++g) {
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t r = g * n + i - i0;
        load_row<E>(at.query(b, i, hq0 + g), w.q + r * D, D);
        load_row<E>(at.query_row_of(call.dout, b, i, hq0 + g), w.dout + r * Dv, Dv);
        w.delta[r] = delta_of<E>(call, b, i, hq0 + g, w.dout + r * Dv, w.out);
        w.lse[r] = *at.lse_of(b, i, hq0 + g);
      }
    }
    std::fill(w.dq, w.dq + group * n * D, 0.0f);
    int64_t lo_all, hi_all;
    mask.visible_range_of_rows(i0, i1, Sq, Sk, &lo_all, &hi_all);
    for (int64_t j0 = lo_all; j0 < hi_all; j0 += kKeyTile) {
      const int64_t jn = std::min(kKeyTile, hi_all - j0);
      for (int64_t j = 0; j < jn; ++j) {
        load_row<E>(at.key(b, j0 + j, h), w.k + j * D, D);
        load_row<E>(at.value(b, j0 + j, h), w.v + j * Dv, Dv);
      }
      for (int64_t i = i0; i < i1; ++i) {
        int64_t lo, hi;
        mask.visible_range(i, Sq, Sk, &lo, &hi);
        const int64_t a = std::max(lo, j0) - j0, e = std::min(hi, j0 + jn) - j0;
        for (int64_t g = 0; g < group; ++g) {
          const int64_t r = g * n + i - i0;
          const float *qr = w.q + r * D, *dor = w.dout + r * Dv;
          for (int64_t j = a; j < e; ++j) {
            float s = dot(qr, w.k + j * D, D) * mask.scale, dcap = 1.0f;
            if (mask.softcap > 0.0f) {
              const float t = std::tanh(s / mask.softcap);
              s = mask.softcap * t;
              dcap = 1.0f - t * t;
            }
            const float p = std::exp(s - w.lse[r]);
            const float ds = p * (dot(dor, w.v + j * Dv, Dv) - w.delta[r]) * dcap * mask.scale;
            axpy(p, dor, w.dv + (j0 + j) * Dv, Dv);
            axpy(ds, w.k + j * D, w.dq + r * D, D);
            axpy(ds, qr, w.dk + (j0 + j) * D, D);
          }
        }
      }
    }
    for (int64_t g = 0; g < group; ++g) {
      for (int64_t i = i0; i < i1; ++i)
        store_row<E>(w.dq + (g * n + i - i0) * D, at.query_row_of(call.dq, b, i, hq0 + g), D);
    }
  }
  for (int64_t j = 0; j < Sk; ++j) {
    store_row<E>(w.dk + j * D, at.key_row_of(call.dk, b, j, h), D);
    store_row<E>(w.dv + j * Dv, at.key_row_of(call.dv, b, j, h), Dv);
  }
}

// Runs pair(call, b, h, workspace) for every (sequence, kv head) pair, in parallel, each thread
// with a workspace of bytes_for(longest sequence's keys) bytes; then zeros the gradients of packed
// keys past the last sequence. `pair` must not throw.
template <class E, class BytesFor, class Pair>
xhal_status run_backward_pairs(const xhal_op_call* c, const std::vector<SequenceSpan>& seqs, bool batched,
                               BytesFor&& bytes_for, Pair&& pair, char* msg, size_t len) {
  using S = typename E::Storage;
  const AttentionRows<S> at(c, seqs, batched);
  const BackwardCall<S> call(c, at);
  const int64_t Hkv = at.kv_heads();
  if (Hkv == 0) return XHAL_OK;
  int64_t max_keys = 0, covered_keys = 0;
  for (const SequenceSpan& s : seqs) {
    max_keys = std::max(max_keys, s.Sk);
    covered_keys = std::max(covered_keys, s.k_begin + s.Sk);
  }
  const int64_t pairs = int64_t(seqs.size()) * Hkv;
  const ThreadWorkspaces workspaces(c, bytes_for(call, max_keys), pairs);
  if (!workspaces.ok()) {
    return workspaces_refused(msg, len, batched ? "attention_backward" : "attention_varlen_backward",
                              workspaces.bytes_each());
  }
#pragma omp parallel for schedule(dynamic) num_threads(workspaces.threads())
  for (int64_t p = 0; p < pairs; ++p) pair(call, p / Hkv, p % Hkv, workspaces.of_this_thread(), max_keys);
  // Packed keys past the last sequence belong to none: their gradients are zero.
  if (!batched) {
    for (int64_t t = covered_keys; t < call.dk.size(0); ++t) {
      for (int64_t h = 0; h < Hkv; ++h) {
        std::fill(call.dk.at(t, h, 0), call.dk.at(t, h, 0) + call.D, E::store(0.0f));
        std::fill(call.dv.at(t, h, 0), call.dv.at(t, h, 0) + call.Dv, E::store(0.0f));
      }
    }
  }
  return XHAL_OK;
}

}  // namespace xhal::cpu

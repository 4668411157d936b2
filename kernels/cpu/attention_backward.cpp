// attention_backward and attention_varlen_backward on the CPU, the reference kernels: one task per
// (sequence, kv head), in parallel. A task keeps its keys' dk and dv in f32 (memory of the order
// of its K and V, no Sq x Sk buffer) and walks the query rows of its group in tiles: for each tile
// it recomputes the probabilities from q, k and the forward's lse, adds Pᵀ dout to dv and
// scale · dSᵀ q to dk, and writes dq = scale · dS k, with dS = P ∘ (dout vᵀ − rowsum(dout ∘ out))
// (times the softcap's derivative). Every sum runs in one order: the same bits run to run.
#include <algorithm>
#include <cmath>
#include <vector>

#include "attention_core.hpp"
#include "attention_tasks.hpp"

namespace xhal::cpu {
namespace {

// A task's buffers (f32): dk and dv of its keys; a tile's queries, douts, dq rows, deltas and lse
// for group * kQueryTile rows; a tile of K and V; one row of out.
struct BackwardBuffers {
  float *dk, *dv, *q, *dout, *dq, *delta, *lse, *k, *v, *out;
  static BackwardBuffers carve(Carver& c, int64_t keys, int64_t rows, int64_t D, int64_t Dv) {
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

float dot(const float* a, const float* b, int64_t n) {
  float s = 0.0f;
#pragma omp simd reduction(+ : s)
  for (int64_t d = 0; d < n; ++d) s += a[d] * b[d];
  return s;
}

void axpy(float a, const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t d = 0; d < n; ++d) y[d] += a * x[d];
}

template <class E>
xhal_status backward_spans(const std::vector<SequenceSpan>& seqs, bool batched, const xhal_op_call* c, char* msg,
                           size_t len) {
  using S = typename E::Storage;
  const MaskParams mask = MaskParams::from(c->params);
  const AttentionRows<S> at(c, seqs, batched);
  const TensorRef<const S> dout(c->tensors[XHAL_ATTENTION_BACKWARD_DOUT]);
  const TensorRef<S> dq(c->tensors[XHAL_ATTENTION_BACKWARD_DQ]), dk(c->tensors[XHAL_ATTENTION_BACKWARD_DK]),
      dv(c->tensors[XHAL_ATTENTION_BACKWARD_DV]);
  const int64_t Hkv = at.kv_heads();
  if (Hkv == 0) return XHAL_OK;
  const int64_t group = at.group(), D = at.q.size(-1), Dv = at.v.size(-1);
  int64_t max_keys = 0, covered_keys = 0;
  for (const SequenceSpan& s : seqs) {
    max_keys = std::max(max_keys, s.Sk);
    covered_keys = std::max(covered_keys, s.k_begin + s.Sk);
  }
  const int64_t pairs = int64_t(seqs.size()) * Hkv, rows = group * kQueryTile;
  const ThreadWorkspaces workspaces(c, BackwardBuffers::bytes(max_keys, rows, D, Dv), pairs);
  if (!workspaces.ok()) {
    return workspaces_refused(msg, len, batched ? "attention_backward" : "attention_varlen_backward",
                              workspaces.bytes_each());
  }
#pragma omp parallel for schedule(dynamic) num_threads(workspaces.threads())
  for (int64_t pair = 0; pair < pairs; ++pair) {
    Carver carver(workspaces.of_this_thread());
    const BackwardBuffers w = BackwardBuffers::carve(carver, max_keys, rows, D, Dv);
    const int64_t b = pair / Hkv, h = pair % Hkv, hq0 = h * group;
    const int64_t Sq = seqs[size_t(b)].Sq, Sk = seqs[size_t(b)].Sk;
    std::fill(w.dk, w.dk + Sk * D, 0.0f);
    std::fill(w.dv, w.dv + Sk * Dv, 0.0f);
    for (int64_t i0 = 0; i0 < Sq; i0 += kQueryTile) {
      const int64_t i1 = std::min(Sq, i0 + kQueryTile), n = i1 - i0;
      for (int64_t g = 0; g < group; ++g) {
        for (int64_t i = i0; i < i1; ++i) {
          const int64_t r = g * n + i - i0;
          load_row<E>(at.query(b, i, hq0 + g), w.q + r * D, D);
          load_row<E>(at.query_row_of(dout, b, i, hq0 + g), w.dout + r * Dv, Dv);
          load_row<E>(at.output(b, i, hq0 + g), w.out, Dv);
          w.delta[r] = dot(w.dout + r * Dv, w.out, Dv);
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
          store_row<E>(w.dq + (g * n + i - i0) * D, at.query_row_of(dq, b, i, hq0 + g), D);
      }
    }
    for (int64_t j = 0; j < Sk; ++j) {
      store_row<E>(w.dk + j * D, at.key_row_of(dk, b, j, h), D);
      store_row<E>(w.dv + j * Dv, at.key_row_of(dv, b, j, h), Dv);
    }
  }
  // Packed keys past the last sequence belong to none: their gradients are zero.
  if (!batched) {
    for (int64_t t = covered_keys; t < dk.size(0); ++t) {
      for (int64_t h = 0; h < Hkv; ++h) {
        std::fill(dk.at(t, h, 0), dk.at(t, h, 0) + D, E::store(0.0f));
        std::fill(dv.at(t, h, 0), dv.at(t, h, 0) + Dv, E::store(0.0f));
      }
    }
  }
  return XHAL_OK;
}

template <class E>
struct AttentionBackwardKernel {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    return backward_spans<E>(batched_spans(c), true, c, msg, len);
  }
};

template <class E>
struct AttentionVarlenBackwardKernel {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    std::vector<SequenceSpan> seqs;
    if (const xhal_status s = varlen_spans(c, msg, len, &seqs); s != XHAL_OK) return s;
    return backward_spans<E>(seqs, false, c, msg, len);
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<AttentionBackwardKernel>(host, "cpu.attention_backward", XHAL_OP_ATTENTION_BACKWARD);
  register_float_kernels<AttentionVarlenBackwardKernel>(host, "cpu.attention_varlen_backward",
                                                        XHAL_OP_ATTENTION_VARLEN_BACKWARD);
}

}  // namespace xhal::cpu

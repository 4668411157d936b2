// The generic attention_backward kernels (any GPU, any head dims up to 8 x warp width, any
// strides and dtypes; deterministic: every sum in one order, no atomics), shared by the generic
// kernel registered in attention_backward.cu and the tensor-core one, which runs them instead of
// itself when its inputs hold non-finite values. Three passes:
//  1. delta: one warp per query row, rowsum(dout ∘ out) into an f32 scratch row per (sequence,
//     query head, row);
//  2. dq: one warp per query row; each lane takes one key of a chunk of a warp width (its score
//     and dout·v), then the warp adds the chunk's scale · dS · k rows into the lanes' slices of dq;
//  3. dk and dv: one warp per key, each lane one query row of a chunk (every query head of the
//     key's group in turn), the warp adding P · dout into dv and scale · dS · q into dk.
// Varlen rows and keys past the last sequence get zero gradients.
#pragma once

#include <cmath>

#include "attention_generic.cuh"

namespace xhal::gpu {
namespace attention_backward {

constexpr int kWarps = 4;  // warps per block

// Strides of the gradients (dense: batch, seq, head; varlen: 0, token, head) beside the forward's.
struct GradLayout {
  AttnLayout fwd;
  int64_t dout[3], dq[3], dk[3], dv[3];
};

inline GradLayout grad_layout_of(const xhal_op_call* c, bool batched) {
  GradLayout g{layout_of(c, batched), {}, {}, {}, {}};
  const auto fill = [&](int64_t* out, int slot) {
    const DLTensor* t = c->tensors[slot];
    const int off = batched ? 1 : 0;
    out[0] = batched ? t->strides[0] : 0, out[1] = t->strides[off], out[2] = t->strides[off + 1];
  };
  fill(g.dout, XHAL_ATTENTION_BACKWARD_DOUT);
  fill(g.dq, XHAL_ATTENTION_BACKWARD_DQ);
  fill(g.dk, XHAL_ATTENTION_BACKWARD_DK);
  fill(g.dv, XHAL_ATTENTION_BACKWARD_DV);
  return g;
}

template <class T>
struct BackwardArgs {
  const T *q, *k, *v, *out, *dout;
  const float* lse;
  T *dq, *dk, *dv;
  float* delta;  // [batch, Hq, max_rows]
  const int* only_if;  // dq_kernel and dkdv_kernel run when null or *only_if != 0
  GradLayout g;
  Sequences seqs;
  int64_t max_rows, max_keys;
  Mask mask;

  // Sequence b's span, cut at max_rows queries and max_keys keys (varlen's max_seqlen: the offsets
  // are trusted on the device, as in the forward; docs/ops.md).
  __device__ void span(int64_t b, int64_t* q0, int64_t* Sq, int64_t* k0, int64_t* Sk) const {
    seqs.span(b, q0, Sq, k0, Sk);
    *Sq = *Sq < max_rows ? *Sq : max_rows;
    *Sk = *Sk < max_keys ? *Sk : max_keys;
  }
};

// The score of query row q (f32, scaled) against key row k, softcapped; dcap = its derivative.
template <class E>
__device__ inline float score_of(const float* q, const typename E::T* k, int64_t D, const Mask& mask, float* dcap) {
  float s = 0.0f;
  for (int64_t d = 0; d < D; ++d) s += q[d] * E::load(k[d]);
  *dcap = 1.0f;
  if (mask.softcap > 0.0f) {
    const float t = tanhf(s / mask.softcap);
    *dcap = 1.0f - t * t;
    s = mask.softcap * t;
  }
  return s;
}

template <class E>
__global__ void __launch_bounds__(kWarps* kWarpSize) delta_kernel(BackwardArgs<typename E::T> a) {
  const AttnLayout& f = a.g.fwd;
  const int lane = threadIdx.x % kWarpSize;
  const int64_t tasks = a.seqs.batch * f.Hq * a.max_rows;
  for (int64_t task = int64_t(blockIdx.x) * kWarps + threadIdx.x / kWarpSize; task < tasks;
       task += int64_t(gridDim.x) * kWarps) {
    const int64_t i = task % a.max_rows, h = task / a.max_rows % f.Hq, b = task / a.max_rows / f.Hq;
    int64_t q0, Sq, k0, Sk;
    a.span(b, &q0, &Sq, &k0, &Sk);
    if (i >= Sq) continue;
    const typename E::T* o = a.out + b * f.o[0] + (q0 + i) * f.o[1] + h * f.o[2];
    const typename E::T* d = a.dout + b * a.g.dout[0] + (q0 + i) * a.g.dout[1] + h * a.g.dout[2];
    float sum = 0.0f;
    for (int64_t x = lane; x < f.Dv; x += kWarpSize) sum += E::load(o[x]) * E::load(d[x]);
    sum = warp_sum(sum);
    if (lane == 0) a.delta[task] = sum;
  }
}

template <class E>
__global__ void __launch_bounds__(kWarps* kWarpSize) dq_kernel(BackwardArgs<typename E::T> a) {
  if (a.only_if != nullptr && *a.only_if == 0) return;
  using T = typename E::T;
  extern __shared__ float shared[];
  const AttnLayout& f = a.g.fwd;
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  float* qs = shared + warp * (f.D + f.Dv);  // the row's q (scaled) and dout in f32
  float* ds_ = qs + f.D;
  const int64_t tasks = a.seqs.batch * f.Hq * a.max_rows;
  for (int64_t task = int64_t(blockIdx.x) * kWarps + warp; task < tasks; task += int64_t(gridDim.x) * kWarps) {
    const int64_t i = task % a.max_rows, h = task / a.max_rows % f.Hq, b = task / a.max_rows / f.Hq;
    int64_t q0, Sq, k0, Sk;
    a.span(b, &q0, &Sq, &k0, &Sk);
    if (i >= Sq) continue;
    const int64_t row = q0 + i, hk = h / f.group;
    const T* q = a.q + b * f.q[0] + row * f.q[1] + h * f.q[2];
    const T* d = a.dout + b * a.g.dout[0] + row * a.g.dout[1] + h * a.g.dout[2];
    for (int64_t x = lane; x < f.D; x += kWarpSize) qs[x] = E::load(q[x]) * a.mask.scale;
    for (int64_t x = lane; x < f.Dv; x += kWarpSize) ds_[x] = E::load(d[x]);
    warp_sync();
    const float lse = a.lse[b * f.lse[0] + h * f.lse[1] + row * f.lse[2]], delta = a.delta[task];
    const T* k = a.k + b * f.k[0] + k0 * f.k[1] + hk * f.k[2];
    const T* v = a.v + b * f.v[0] + k0 * f.v[1] + hk * f.v[2];
    float acc[kMaxValuesPerLane] = {};
    int64_t lo, hi;
    a.mask.visible(i, Sq, Sk, &lo, &hi);
    for (int64_t j0 = lo; j0 < hi; j0 += kWarpSize) {
      const int64_t j = j0 + lane;
      float ds = 0.0f;
      if (j < hi) {
        float dcap;
        const float p = __expf(score_of<E>(qs, k + j * f.k[1], f.D, a.mask, &dcap) - lse);
        float dp = 0.0f;
        for (int64_t x = 0; x < f.Dv; ++x) dp += ds_[x] * E::load(v[j * f.v[1] + x]);
        ds = p * (dp - delta) * dcap * a.mask.scale;
      }
      const int64_t chunk = hi - j0 < kWarpSize ? hi - j0 : kWarpSize;
      for (int jj = 0; jj < chunk; ++jj) {
        const float w = warp_shfl(ds, jj);
        const T* kr = k + (j0 + jj) * f.k[1];
        for (int r = 0; r < kMaxValuesPerLane; ++r) {
          const int64_t x = lane + int64_t(r) * kWarpSize;
          if (x < f.D) acc[r] += w * E::load(kr[x]);
        }
      }
    }
    T* dq = a.dq + b * a.g.dq[0] + row * a.g.dq[1] + h * a.g.dq[2];
    for (int r = 0; r < kMaxValuesPerLane; ++r) {
      const int64_t x = lane + int64_t(r) * kWarpSize;
      if (x < f.D) dq[x] = E::store(acc[r]);
    }
    warp_sync();  // the shared rows are rewritten by the next task
  }
}

template <class E>
__global__ void __launch_bounds__(kWarps* kWarpSize) dkdv_kernel(BackwardArgs<typename E::T> a) {
  if (a.only_if != nullptr && *a.only_if == 0) return;
  using T = typename E::T;
  extern __shared__ float shared[];
  const AttnLayout& f = a.g.fwd;
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  float* ks = shared + warp * (f.D + f.Dv);  // the key's k (scaled) and v in f32
  float* vs = ks + f.D;
  const int64_t Hkv = f.Hq / f.group, tasks = a.seqs.batch * Hkv * a.max_keys;
  for (int64_t task = int64_t(blockIdx.x) * kWarps + warp; task < tasks; task += int64_t(gridDim.x) * kWarps) {
    const int64_t j = task % a.max_keys, hk = task / a.max_keys % Hkv, b = task / a.max_keys / Hkv;
    int64_t q0, Sq, k0, Sk;
    a.span(b, &q0, &Sq, &k0, &Sk);
    if (j >= Sk) continue;
    const T* k = a.k + b * f.k[0] + (k0 + j) * f.k[1] + hk * f.k[2];
    const T* v = a.v + b * f.v[0] + (k0 + j) * f.v[1] + hk * f.v[2];
    for (int64_t x = lane; x < f.D; x += kWarpSize) ks[x] = E::load(k[x]) * a.mask.scale;
    for (int64_t x = lane; x < f.Dv; x += kWarpSize) vs[x] = E::load(v[x]);
    warp_sync();
    float dk_acc[kMaxValuesPerLane] = {}, dv_acc[kMaxValuesPerLane] = {};
    int64_t lo, hi;
    a.mask.seen_by(j, Sq, Sk, &lo, &hi);
    for (int64_t h = hk * f.group; h < (hk + 1) * f.group; ++h) {
      const T* q = a.q + b * f.q[0] + q0 * f.q[1] + h * f.q[2];
      const T* d = a.dout + b * a.g.dout[0] + q0 * a.g.dout[1] + h * a.g.dout[2];
      for (int64_t i0 = lo; i0 < hi; i0 += kWarpSize) {
        const int64_t i = i0 + lane;
        float p = 0.0f, ds = 0.0f;
        if (i < hi) {
          const float lse = a.lse[b * f.lse[0] + h * f.lse[1] + (q0 + i) * f.lse[2]];
          const float delta = a.delta[(b * f.Hq + h) * a.max_rows + i];
          float s = 0.0f, dp = 0.0f, dcap = 1.0f;
          for (int64_t x = 0; x < f.D; ++x) s += ks[x] * E::load(q[i * f.q[1] + x]);
          if (a.mask.softcap > 0.0f) {
            const float t = tanhf(s / a.mask.softcap);
            dcap = 1.0f - t * t;
            s = a.mask.softcap * t;
          }
          p = __expf(s - lse);
          for (int64_t x = 0; x < f.Dv; ++x) dp += vs[x] * E::load(d[i * a.g.dout[1] + x]);
          ds = p * (dp - delta) * dcap * a.mask.scale;
        }
        const int64_t chunk = hi - i0 < kWarpSize ? hi - i0 : kWarpSize;
        for (int ii = 0; ii < chunk; ++ii) {
          const float pw = warp_shfl(p, ii), dw = warp_shfl(ds, ii);
          const T *qr = q + (i0 + ii) * f.q[1], *dr = d + (i0 + ii) * a.g.dout[1];
          for (int r = 0; r < kMaxValuesPerLane; ++r) {
            const int64_t x = lane + int64_t(r) * kWarpSize;
            if (x < f.D) dk_acc[r] += dw * E::load(qr[x]);
            if (x < f.Dv) dv_acc[r] += pw * E::load(dr[x]);
          }
        }
      }
    }
    T* dk = a.dk + b * a.g.dk[0] + (k0 + j) * a.g.dk[1] + hk * a.g.dk[2];
    T* dv = a.dv + b * a.g.dv[0] + (k0 + j) * a.g.dv[1] + hk * a.g.dv[2];
    for (int r = 0; r < kMaxValuesPerLane; ++r) {
      const int64_t x = lane + int64_t(r) * kWarpSize;
      if (x < f.D) dk[x] = E::store(dk_acc[r]);
      if (x < f.Dv) dv[x] = E::store(dv_acc[r]);
    }
    warp_sync();
  }
}

// Varlen tokens past the last sequence: query rows [cu_q[B], Tq) get dq = 0, keys [cu_k[B], Tk)
// dk = dv = 0. The offsets stay on the device.
template <class E>
__global__ void uncovered_gradients_kernel(BackwardArgs<typename E::T> a, const int32_t* last_q, const int32_t* last_k,
                                           int64_t Tq, int64_t Tk) {
  const AttnLayout& f = a.g.fwd;
  const int64_t Hkv = f.Hq / f.group, q_first = *last_q, k_first = *last_k;
  const int64_t q_count = q_first < Tq ? (Tq - q_first) * f.Hq * f.D : 0;
  const int64_t k_count = k_first < Tk ? (Tk - k_first) * Hkv * (f.D + f.Dv) : 0;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t x = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; x < q_count + k_count; x += stride) {
    if (x < q_count) {
      const int64_t row = q_first + x / (f.Hq * f.D), h = x / f.D % f.Hq, d = x % f.D;
      a.dq[row * a.g.dq[1] + h * a.g.dq[2] + d] = E::store(0.0f);
    } else {
      const int64_t y = x - q_count, per_key = Hkv * (f.D + f.Dv);
      const int64_t key = k_first + y / per_key, h = y % per_key / (f.D + f.Dv), d = y % (f.D + f.Dv);
      if (d < f.D) {
        a.dk[key * a.g.dk[1] + h * a.g.dk[2] + d] = E::store(0.0f);
      } else {
        a.dv[key * a.g.dv[1] + h * a.g.dv[2] + d - f.D] = E::store(0.0f);
      }
    }
  }
}

// The sequences of a backward call and the most keys one has: the dense batch (k's length) or
// varlen's spans (max_seqlen_k; cu_seqlens trusted on the device, as in the forward).
struct BackwardProblem {
  AttnProblem problem;
  int64_t max_keys;
};

inline BackwardProblem backward_problem(const xhal_op_call* c) {
  if (c->op == XHAL_OP_ATTENTION_VARLEN_BACKWARD) {
    return {varlen_problem(c), kernels::op_params<xhal_attention_op_params>(c).max_seqlen_k};
  }
  return {dense_problem(c), c->tensors[XHAL_ATTENTION_BACKWARD_K]->shape[1]};
}

// The arguments of a call; delta and only_if are the caller's to set.
template <class T>
BackwardArgs<T> backward_args(const xhal_op_call* c, const AttnProblem& problem, int64_t max_keys) {
  const auto data = [&](int slot) { return static_cast<T*>(c->tensors[slot]->data); };
  return {data(XHAL_ATTENTION_BACKWARD_Q),
          data(XHAL_ATTENTION_BACKWARD_K),
          data(XHAL_ATTENTION_BACKWARD_V),
          data(XHAL_ATTENTION_BACKWARD_OUT),
          data(XHAL_ATTENTION_BACKWARD_DOUT),
          static_cast<const float*>(c->tensors[XHAL_ATTENTION_BACKWARD_LSE]->data),
          data(XHAL_ATTENTION_BACKWARD_DQ),
          data(XHAL_ATTENTION_BACKWARD_DK),
          data(XHAL_ATTENTION_BACKWARD_DV),
          nullptr,
          nullptr,
          grad_layout_of(c, problem.batched),
          problem.seqs,
          problem.max_rows,
          max_keys,
          Mask::from(c->params)};
}

// The dq and the dk/dv passes over a.delta (computed by then), then the varlen tails, on the call's
// stream; the grids hold at most max_blocks blocks (the passes loop over their tasks).
template <class E>
xhal_status launch_gradient_passes(const xhal_op_call* c, const BackwardArgs<typename E::T>& a, bool batched,
                                   int64_t max_blocks, char* msg, size_t len) {
  const AttnLayout& f = a.g.fwd;
  const int64_t Hkv = f.Hq / f.group;
  const int64_t row_tasks = a.seqs.batch * f.Hq * a.max_rows, key_tasks = a.seqs.batch * Hkv * a.max_keys;
  auto stream = static_cast<gpuStream_t>(c->stream);
  const size_t shared = size_t(kWarps) * (f.D + f.Dv) * sizeof(float);
  if (shared > 48 * 1024) {
    allow_shared_bytes(dq_kernel<E>, shared);
    allow_shared_bytes(dkdv_kernel<E>, shared);
  }
  const unsigned threads = kWarps * kWarpSize;
  xhal_status s = XHAL_OK;
  if (row_tasks > 0) {
    dq_kernel<E><<<grid_for(row_tasks, kWarps, max_blocks), threads, shared, stream>>>(a);
    s = launch_status(msg, len, "generic attention_backward (dq)");
  }
  if (s == XHAL_OK && key_tasks > 0) {
    dkdv_kernel<E><<<grid_for(key_tasks, kWarps, max_blocks), threads, shared, stream>>>(a);
    s = launch_status(msg, len, "generic attention_backward (dk, dv)");
  }
  if (s == XHAL_OK && !batched) {
    const DLTensor *cu_q = c->tensors[XHAL_ATTENTION_VARLEN_BACKWARD_CU_SEQLENS_Q],
                   *cu_k = c->tensors[XHAL_ATTENTION_VARLEN_BACKWARD_CU_SEQLENS_K];
    const int64_t Tq = c->tensors[XHAL_ATTENTION_BACKWARD_Q]->shape[0],
                  Tk = c->tensors[XHAL_ATTENTION_BACKWARD_K]->shape[0];
    uncovered_gradients_kernel<E><<<grid_for(Tq * f.Hq * f.D + Tk * Hkv * (f.D + f.Dv), 256, 256), 256, 0, stream>>>(
        a, static_cast<const int32_t*>(cu_q->data) + (cu_q->shape[0] - 1) * cu_q->strides[0],
        static_cast<const int32_t*>(cu_k->data) + (cu_k->shape[0] - 1) * cu_k->strides[0], Tq, Tk);
    s = launch_status(msg, len, "attention_varlen_backward's tokens past the last sequence");
  }
  return s;
}

// The generic kernel: deltas in scratch, then the gradient passes.
template <class E>
xhal_status launch_backward(const xhal_op_call* c, char* msg, size_t len) {
  using T = typename E::T;
  const auto [problem, max_keys] = backward_problem(c);
  BackwardArgs<T> a = backward_args<T>(c, problem, max_keys);
  const AttnLayout& f = a.g.fwd;
  if (f.Hq == 0) return XHAL_OK;
  const int64_t row_tasks = a.seqs.batch * f.Hq * a.max_rows;
  void* scratch = nullptr;
  if (const xhal_status s = c->host->scratch_alloc(c->host->ctx, c->device, size_t(row_tasks + 1) * sizeof(float),
                                                   c->stream, &scratch, msg, len);
      s != XHAL_OK) {
    return s;
  }
  a.delta = static_cast<float*>(scratch);
  if (row_tasks > 0) {
    delta_kernel<E>
        <<<grid_for(row_tasks, kWarps, int64_t(1) << 20), kWarps * kWarpSize, 0, static_cast<gpuStream_t>(c->stream)>>>(
            a);
  }
  xhal_status s = launch_status(msg, len, "generic attention_backward (delta)");
  if (s == XHAL_OK) s = launch_gradient_passes<E>(c, a, problem.batched, int64_t(1) << 20, msg, len);
  // The allocator is stream-ordered: the deltas are reused only after these kernels.
  c->host->scratch_free(c->host->ctx, c->device, scratch);
  return s;
}

// Each lane holds up to kMaxValuesPerLane elements of a dq, dk or dv row.
inline const char* generic_supports(void*, const xhal_op_call* c) {
  const DLTensor *q = c->tensors[XHAL_ATTENTION_BACKWARD_Q], *v = c->tensors[XHAL_ATTENTION_BACKWARD_V];
  if (q->shape[q->ndim - 1] > int64_t(kMaxValuesPerLane) * kWarpSize) return "head dim above 8 x warp width";
  if (v->shape[v->ndim - 1] > int64_t(kMaxValuesPerLane) * kWarpSize) return "value head dim above 8 x warp width";
  return nullptr;
}

}  // namespace attention_backward
}  // namespace xhal::gpu

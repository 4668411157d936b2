// What the tensor-core attention_backward kernels (mma.sync, attention_backward_mma.cu; wgmma,
// attention_backward_sm90.cu) share around their main kernel, which owns a block of keys and walks
// the query tiles that see them:
//  - a pre-pass computing delta = rowsum(dO ∘ O) and looking for non-finite values in q, k, v and
//    dout: with any, the main kernel exits at once and the generic passes
//    (attention_backward_generic.cuh) compute the gradients, whose masked terms are never
//    multiplied (0 · inf would be NaN on tensor cores);
//  - dQ added (scaled) into an f32 accumulator in global memory with atomics, then converted to
//    dq's dtype;
//  - deterministic mode: the key blocks of one (sequence, kv head) add into each dQ tile in
//    descending order of their keys, a counter per (sequence, query head, tile) saying whose turn
//    it is, so the f32 sums have the same bits run to run.
#pragma once

#include <type_traits>

#include "attention_backward_generic.cuh"

#if !defined(__HIPCC__)

#include "flash_launch.cuh"
#include "mma_sm80.cuh"

namespace xhal::gpu::attention_backward {

constexpr float kLog2e = 1.4426950408889634f;

// The pre-pass and dq's conversion go over rows of D (64 or 128) elements, a group of D / 8
// threads a row, a 16-byte chunk each (one element at a time where a row is not 16-byte aligned):
// a thread each element, with its index divided out, ran 5-16 times slower than a copy.

// Eight elements from p as f32: one 16-byte load where `vector`.
template <class E>
__device__ inline void load8(const typename E::T* p, bool vector, float (&v)[8]) {
  if (vector) {
    Chunk<E, 8> c;
    c.load(p);
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = c.get(k);
  } else {
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = E::load(p[k]);
  }
}

// Per (sequence, query head, row): delta = rowsum(dout ∘ out) and, for q and dout, whether any
// value is non-finite (then *flag = 1). q and dout rows are 16-byte aligned (the kernels'
// conditions); out's where `out_vector`.
template <class E>
__global__ void __launch_bounds__(256) prepare_rows_kernel(BackwardArgs<typename E::T> a, int* flag, bool out_vector) {
  const AttnLayout& f = a.g.fwd;
  const int per_row = int(f.D / 8);
  bool finite = true;
  for_row_tasks(a.seqs.batch * f.Hq * a.max_rows, per_row, [&](int64_t task, bool valid, int sub) {
    const int64_t i = task % a.max_rows, h = task / a.max_rows % f.Hq, b = task / a.max_rows / f.Hq;
    float sum = 0.0f;
    bool live = false;
    if (valid) {
      int64_t q0, Sq, k0, Sk;
      a.span(b, &q0, &Sq, &k0, &Sk);
      if (i < Sq) {
        live = true;
        const int64_t row = q0 + i, x = int64_t(sub) * 8;
        float o[8], d[8], q[8];
        load8<E>(a.out + b * f.o[0] + row * f.o[1] + h * f.o[2] + x, out_vector, o);
        load8<E>(a.dout + b * a.g.dout[0] + row * a.g.dout[1] + h * a.g.dout[2] + x, true, d);
        load8<E>(a.q + b * f.q[0] + row * f.q[1] + h * f.q[2] + x, true, q);
#pragma unroll
        for (int k = 0; k < 8; ++k) {
          sum += o[k] * d[k];
          finite = finite && isfinite(d[k]) && isfinite(q[k]);
        }
      }
    }
    for (int m = per_row / 2; m > 0; m /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, m);
    if (live && sub == 0) a.delta[task] = sum;
  });
  if (!finite) *flag = 1;
}

// Per (sequence, key, kv head): whether its k or v row holds a non-finite value (then *flag = 1).
template <class E>
__global__ void __launch_bounds__(256) scan_keys_kernel(BackwardArgs<typename E::T> a, int* flag) {
  const AttnLayout& f = a.g.fwd;
  const int64_t Hkv = f.Hq / f.group;
  bool finite = true;
  for_row_tasks(a.seqs.batch * a.max_keys * Hkv, int(f.D / 8), [&](int64_t task, bool valid, int sub) {
    if (!valid) return;
    const int64_t h = task % Hkv, j = task / Hkv % a.max_keys, b = task / Hkv / a.max_keys;
    int64_t q0, Sq, k0, Sk;
    a.span(b, &q0, &Sq, &k0, &Sk);
    if (j >= Sk) return;
    const int64_t x = int64_t(sub) * 8;
    float k[8], v[8];
    load8<E>(a.k + b * f.k[0] + (k0 + j) * f.k[1] + h * f.k[2] + x, true, k);
    load8<E>(a.v + b * f.v[0] + (k0 + j) * f.v[1] + h * f.v[2] + x, true, v);
#pragma unroll
    for (int e = 0; e < 8; ++e) finite = finite && isfinite(k[e]) && isfinite(v[e]);
  });
  if (!finite) *flag = 1;
}

// acc[0] += x, acc[1] += y: one vector atomic where the GPU has them (sm_90), else two.
__device__ inline void add_pair(float* acc, float x, float y) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  atomicAdd(reinterpret_cast<float2*>(acc), make_float2(x, y));
#else
  atomicAdd(acc, x);
  atomicAdd(acc + 1, y);
#endif
}

// Whether query i sees key j (both within the sequence).
__device__ inline bool sees(const Mask& mask, int64_t i, int64_t j, int64_t Sq, int64_t Sk) {
  const int64_t diag = i + Sk - Sq;
  return i < Sq && j < Sk && (!mask.causal || j <= diag) && (mask.window_left < 0 || j >= diag - mask.window_left) &&
         (mask.window_right < 0 || j <= diag + mask.window_right);
}

// The visible pairs of a query tile (rows from m0) among a thread's two keys (key0 and key0 + 8),
// in 32-bit arithmetic: key j and query i see each other when j - i lies in the mask's band
// [lo, hi], i < Sq and j < Sk. Built only for the tiles the mask cuts through (the others take no
// per-pair test at all); sees() then costs two integer operations and a select.
struct BandMask {
  uint32_t from_lo = 0, span = 0;  // (key0 - m0) - lo and hi - lo, modulo 2^32
  int rows = 0;  // the tile's rows before Sq (0 when the band is empty)
  bool key_ok[2] = {};

  BandMask() = default;  // for the tiles that test no pair
  __device__ BandMask(const Mask& mask, int64_t m0, int64_t key0, int64_t Sq, int64_t Sk, int block_m) {
    const int64_t off = Sk - Sq, kMin = -(int64_t(1) << 31), kMax = (int64_t(1) << 31) - 1;
    int64_t lo = mask.window_left >= 0 ? off - mask.window_left : kMin, hi = kMax;
    if (mask.causal) hi = off;
    if (mask.window_right >= 0) hi = hi < off + mask.window_right ? hi : off + mask.window_right;
    lo = lo < kMin ? kMin : (lo > kMax ? kMax : lo);
    hi = hi < kMin ? kMin : (hi > kMax ? kMax : hi);
    from_lo = uint32_t(key0 - m0 - lo);
    span = uint32_t(hi - lo);
    const int64_t left = Sq - m0;
    rows = hi < lo ? 0 : int(left < block_m ? left : block_m);
    key_ok[0] = key0 < Sk;
    key_ok[1] = key0 + 8 < Sk;
  }
  // Query m0 + qi and key key0 + 8 * half.
  __device__ bool sees(int qi, int half) const {
    return from_lo + uint32_t(8 * half - qi) <= span && qi < rows && key_ok[half];
  }
};

// Pᵀ and dSᵀ in place of a thread's Sᵀ and dPᵀ values of one 8-query tile t (element c: key
// key0 + 8 (c / 2), query 8t + 2 tig + c % 2): p = exp2(s scale_log2 - lse_log2), ds = p (dp -
// delta), masked pairs exactly 0. lse2 (in log2 units) and delta2: the thread's two queries.
template <bool kMasked>
__device__ inline void score_gradients(float (&s)[4], float (&dp)[4], float2 lse2, float2 delta2, float scale_log2,
                                       const BandMask& band, int t, int tig) {
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    const float p = sm80::fast_exp2(fmaf(s[c], scale_log2, -((c & 1) ? lse2.y : lse2.x)));
    const float ds = p * (dp[c] - ((c & 1) ? delta2.y : delta2.x));
    if constexpr (kMasked) {
      const bool visible = band.sees(t * 8 + tig * 2 + (c & 1), c / 2);
      s[c] = visible ? p : 0.0f;
      dp[c] = visible ? ds : 0.0f;
    } else {
      s[c] = p;
      dp[c] = ds;
    }
  }
}

// The query rows [m_begin, m_end) a block of keys [n0, n0 + kBlockN) walks, m_begin rounded down to
// a tile. Both ends never decrease from one key block to the next (the mask's rows move with the
// keys), so the blocks that reach a given tile are consecutive.
template <int kBlockM, int kBlockN>
__device__ inline void query_span(const Mask& mask, int64_t n0, int64_t Sq, int64_t Sk, int64_t* m_begin,
                                  int64_t* m_end) {
  const int64_t n_last = (n0 + kBlockN < Sk ? n0 + kBlockN : Sk) - 1;
  int64_t lo_a, hi_a, lo_b, hi_b;
  mask.seen_by(n0, Sq, Sk, &lo_a, &hi_a);
  mask.seen_by(n_last, Sq, Sk, &lo_b, &hi_b);
  *m_begin = (lo_a < lo_b ? lo_a : lo_b) / kBlockM * kBlockM;
  *m_end = hi_a > hi_b ? hi_a : hi_b;
}

// Deterministic mode's key blocks, launched from the last: block blockIdx.x owns key block
// key_block(). Each waits at a dQ tile for the later key blocks that reach it, which were launched
// before it (no wait on a block that may not be resident yet) and, under a causal or window mask,
// reach the tile in fewer steps of their own (so the waits overlap work).
template <bool kOrdered>
__device__ inline int64_t key_block() {
  return kOrdered ? int64_t(gridDim.x) - 1 - blockIdx.x : blockIdx.x;
}

// The (key block, kv head, sequence) a block of the main kernels owns. Deterministic mode keeps
// the grid's order, key blocks from the last (key_block). Otherwise key blocks go first to last
// across groups of kHeadGroup (kv head, sequence) pairs: under a causal mask the first key blocks
// see the most query tiles, so the long blocks start first and the short ones fill the tail, while
// a group's heads still share their Q and dO in L2. 1.5-1.6% on the causal backward at S4096
// (D128 and D64, H200); the full mask unchanged.
struct KeyBlockCoords {
  int64_t block, hk, b;
};
template <bool kOrdered>
__device__ inline KeyBlockCoords key_block_coords() {
  constexpr int64_t kHeadGroup = 4;
  if (kOrdered) return {key_block<kOrdered>(), int64_t(blockIdx.y), int64_t(blockIdx.z)};
  const int64_t nk = gridDim.x, pairs = int64_t(gridDim.y) * gridDim.z;
  const int64_t linear = blockIdx.x + nk * (blockIdx.y + int64_t(gridDim.y) * blockIdx.z);
  const int64_t first = linear / (nk * kHeadGroup) * kHeadGroup;
  const int64_t in_group = pairs - first < kHeadGroup ? pairs - first : kHeadGroup;
  const int64_t j = linear - first * nk;
  const int64_t pair = first + j % in_group;
  return {j / in_group, pair % gridDim.y, pair / gridDim.y};
}

// How many key blocks after `block` (which reaches the tile at row m0) reach that tile too: every
// block after it ends at or past m0, so they are those that start at or before m0.
template <int kBlockM, int kBlockN>
__device__ inline int later_blocks_reaching(const Mask& mask, int64_t m0, int64_t block, int64_t Sq, int64_t Sk) {
  int64_t lo = block, hi = (Sk + kBlockN - 1) / kBlockN - 1;  // the last reaching block lies in [lo, hi]
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) / 2;
    int64_t begin, end;
    query_span<kBlockM, kBlockN>(mask, mid * kBlockN, Sq, Sk, &begin, &end);
    if (begin <= m0) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return int(lo - block);
}

// bar.sync on named barrier kId of kCount threads (0 and the whole block: __syncthreads).
template <int kId, int kCount>
__device__ inline void sync_barrier() {
  asm volatile("bar.sync %0, %1;\n" ::"n"(kId), "n"(kCount) : "memory");
}

// Deterministic mode's turns: the threads that add a block's dQ (kCount of them, meeting at
// barrier kId; `leader` one of them) wait until the counter of their dQ tile says that every
// block before theirs has added its share, and pass the turn on once their own atomics are issued.
template <int kId, int kCount>
__device__ inline void wait_turn(const int* turn, int expected, bool leader) {
  if (leader) {
    int seen;
    do {
      asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(seen) : "l"(turn) : "memory");
    } while (seen != expected);
  }
  sync_barrier<kId, kCount>();
}
template <int kId, int kCount>
__device__ inline void pass_turn(int* turn, bool leader) {
  sync_barrier<kId, kCount>();
  if (leader) {
    asm volatile("fence.acq_rel.gpu;\nred.relaxed.gpu.global.add.s32 [%0], 1;\n" ::"l"(turn) : "memory");
  }
}

// The turn counter of dQ tile (sequence b, query head h, rows from m0), once this key block's turn
// has come (wait_turn's barrier kId of kCount threads).
template <int kBlockM, int kBlockN, int kId, int kCount>
__device__ inline int* wait_dq_turn(int* turns, int64_t tiles_per_head, const Mask& mask, int64_t b, int64_t Hq,
                                    int64_t h, int64_t m0, int64_t block, int64_t Sq, int64_t Sk, bool leader) {
  int* turn = turns + (b * Hq + h) * tiles_per_head + m0 / kBlockM;
  wait_turn<kId, kCount>(turn, later_blocks_reaching<kBlockM, kBlockN>(mask, m0, block, Sq, Sk), leader);
  return turn;
}

// A warp's dQ fragment (mma.sync's accumulator layout: rows i0 + group and i0 + group + 8, kTiles
// n-tiles of 8 columns from column col0), times scale, into the f32 accumulator of query head h
// (rows of Hq x kD values, the sequence's first at acc_row0); rows at or past Sq are left out.
template <int kD, int kTiles>
__device__ inline void add_dq_rows(float* dq_accum, const float (&dq)[kTiles][4], int64_t acc_row0, int64_t i0,
                                   int64_t Sq, int64_t Hq, int64_t h, int col0, float scale, int group, int tig) {
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const int64_t i = i0 + group + hh * 8;
    if (i >= Sq) continue;
    float* acc = dq_accum + ((acc_row0 + i) * Hq + h) * kD + col0 + tig * 2;
#pragma unroll
    for (int t = 0; t < kTiles; ++t) add_pair(acc + t * 8, dq[t][2 * hh] * scale, dq[t][2 * hh + 1] * scale);
  }
}

// A warp's dK (times the mask's scale) and dV fragments, for keys j0 + group and j0 + group + 8 of
// sequence b (its keys from k0) and kv head hk, in their dtype; keys at or past Sk are left out.
template <class E, int kDTiles>
__device__ inline void store_key_gradients(const BackwardArgs<typename E::T>& a, const float (&dk)[kDTiles][4],
                                           const float (&dv)[kDTiles][4], int64_t b, int64_t hk, int64_t k0, int64_t j0,
                                           int64_t Sk, int group, int tig) {
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const int64_t j = j0 + group + hh * 8;
    if (j >= Sk) continue;
    typename E::T* dk_row = a.dk + b * a.g.dk[0] + (k0 + j) * a.g.dk[1] + hk * a.g.dk[2];
    typename E::T* dv_row = a.dv + b * a.g.dv[0] + (k0 + j) * a.g.dv[1] + hk * a.g.dv[2];
#pragma unroll
    for (int t = 0; t < kDTiles; ++t) {
      const int d = t * 8 + tig * 2;
      *reinterpret_cast<uint32_t*>(dk_row + d) =
          sm80::pack2<E>(dk[t][2 * hh] * a.mask.scale, dk[t][2 * hh + 1] * a.mask.scale);
      *reinterpret_cast<uint32_t*>(dv_row + d) = sm80::pack2<E>(dv[t][2 * hh], dv[t][2 * hh + 1]);
    }
  }
}

// The main kernels' grid: blocks of kBlockN keys, kv heads, sequences.
template <class T>
dim3 key_block_grid(const BackwardArgs<T>& a, int block_n) {
  return dim3(unsigned((a.max_keys + block_n - 1) / block_n), unsigned(a.g.fwd.Hq / a.g.fwd.group),
              unsigned(a.seqs.batch));
}

// dq = the f32 accumulator in dq's dtype, for every row of the call (rows no sequence covers hold
// 0); dq's rows 16-byte aligned where `dq_vector`.
template <class E>
__global__ void __launch_bounds__(256)
    convert_dq_kernel(BackwardArgs<typename E::T> a, const float* dq_accum, int64_t batches, int64_t rows,
                      const int* flag, bool dq_vector) {
  if (*flag != 0) return;
  const AttnLayout& f = a.g.fwd;
  for_row_tasks(batches * rows * f.Hq, int(f.D / 8), [&](int64_t task, bool valid, int sub) {
    if (!valid) return;
    const int64_t h = task % f.Hq, i = task / f.Hq % rows, b = task / f.Hq / rows, x = int64_t(sub) * 8;
    const float4* src = reinterpret_cast<const float4*>(dq_accum + task * f.D + x);
    const float4 lo = src[0], hi = src[1];
    const float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    typename E::T* dst = a.dq + b * a.g.dq[0] + i * a.g.dq[1] + h * a.g.dq[2] + x;
    if (dq_vector) {
      Chunk<E, 8> c;
      c.set(v);
      c.store(dst);
    } else {
#pragma unroll
      for (int k = 0; k < 8; ++k) dst[k] = E::store(v[k]);
    }
  });
}

// Everything around the main kernel: scratch for delta, dq's f32 accumulator, the non-finite flag and
// (deterministic mode) the turn counters; the pre-pass; main(a, dq_accum, accum_batch_rows, turns,
// tiles_per_head, flag, stream), which launches the main kernel for query tiles of kBlockM rows;
// dq's conversion; the generic passes where the inputs held non-finite values.
template <class E, int kBlockM, class Main>
xhal_status launch_tensor_core_backward(const xhal_op_call* c, char* msg, size_t len, Main&& main) {
  using T = typename E::T;
  const auto [problem, max_keys] = attention_backward::backward_problem(c);
  BackwardArgs<T> a = backward_args<T>(c, problem, max_keys);
  const AttnLayout& f = a.g.fwd;
  if (f.Hq == 0) return XHAL_OK;
  const DLTensor* q = c->tensors[XHAL_ATTENTION_BACKWARD_Q];
  const int64_t batches = problem.batched ? a.seqs.batch : 1, rows = problem.batched ? q->shape[1] : q->shape[0];
  const int64_t row_tasks = a.seqs.batch * f.Hq * a.max_rows, accum = batches * rows * f.Hq * f.D;
  const size_t delta_bytes = (size_t(row_tasks) * 4 + 255) / 256 * 256, accum_bytes = size_t(accum) * 4;
  // Deterministic mode: a turn counter per (sequence, query head, query tile).
  const bool ordered = kernels::deterministic(c);
  const int64_t tiles_per_head = (a.max_rows + kBlockM - 1) / kBlockM;
  const size_t turn_bytes = ordered ? size_t(a.seqs.batch * f.Hq * tiles_per_head) * 4 : 0;
  void* scratch = nullptr;
  if (const xhal_status s = c->host->scratch_alloc(
          c->host->ctx, c->device, delta_bytes + accum_bytes + 256 + turn_bytes, c->stream, &scratch, msg, len);
      s != XHAL_OK) {
    return s;
  }
  auto* base = static_cast<char*>(scratch);
  a.delta = reinterpret_cast<float*>(base);
  auto* dq_accum = reinterpret_cast<float*>(base + delta_bytes);
  auto* flag = reinterpret_cast<int*>(base + delta_bytes + accum_bytes);
  int* turns = ordered ? reinterpret_cast<int*>(base + delta_bytes + accum_bytes + 256) : nullptr;
  a.only_if = flag;
  auto stream = static_cast<gpuStream_t>(c->stream);
  xhal_status s = gpuMemsetAsync(dq_accum, 0, accum_bytes + 256 + turn_bytes, stream) == gpuSuccess
                      ? XHAL_OK
                      : kernel_error(msg, len, XHAL_ERR_DEVICE, "attention_backward: clearing dq's accumulator failed");
  const int64_t sms = multiprocessor_count(c->device);
  if (s == XHAL_OK) {
    const int64_t rows_per_block = 256 / (f.D / 8);  // 16 or 32
    if (row_tasks > 0) {
      prepare_rows_kernel<E><<<grid_for(row_tasks, rows_per_block, 16 * sms), 256, 0, stream>>>(
          a, flag, rows_vectorizable(c->tensors[XHAL_ATTENTION_BACKWARD_OUT], f.D));
    }
    const int64_t key_tasks = a.seqs.batch * max_keys * (f.Hq / f.group);
    if (key_tasks > 0) {
      scan_keys_kernel<E><<<grid_for(key_tasks, rows_per_block, 16 * sms), 256, 0, stream>>>(a, flag);
    }
    s = launch_status(msg, len, "attention_backward (delta and the non-finite scan)");
  }
  if (s == XHAL_OK && max_keys > 0 && a.seqs.batch > 0) {
    s = main(a, dq_accum, problem.batched ? rows : 0, turns, tiles_per_head, flag, stream);
    if (s == XHAL_OK) s = launch_status(msg, len, "attention_backward (tensor cores)");
  }
  if (s == XHAL_OK) {
    const int64_t dq_rows = batches * rows * f.Hq;
    if (dq_rows > 0) {
      convert_dq_kernel<E><<<grid_for(dq_rows, 256 / (f.D / 8), 16 * sms), 256, 0, stream>>>(
          a, dq_accum, batches, rows, flag, rows_vectorizable(c->tensors[XHAL_ATTENTION_BACKWARD_DQ], f.D));
    }
    s = launch_status(msg, len, "attention_backward (dq)");
  }
  // Where the inputs held non-finite values, the generic passes (small grids: they exit at once
  // otherwise); the varlen tails in any case.
  if (s == XHAL_OK) s = launch_gradient_passes<E>(c, a, problem.batched, 2 * sms, msg, len);
  // The allocator is stream-ordered: the scratch is reused only after these kernels.
  c->host->scratch_free(c->host->ctx, c->device, scratch);
  return s;
}

// The tensor-core kernels' conditions: the forward flash kernel's on q, k, v and out, D in
// {64, 128}, no softcap, dout's rows 16-byte aligned and dk, dv 4-byte aligned pairs.
inline const char* tensor_core_supports(const xhal_op_call* c) {
  if (const char* why = flash_supports(nullptr, c)) return why;
  const DLTensor* q = c->tensors[XHAL_ATTENTION_BACKWARD_Q];
  const int64_t D = q->shape[q->ndim - 1];
  if (D != 64 && D != 128) return "head dim not 64 or 128";
  if (kernels::op_params<xhal_attention_op_params>(c).softcap > 0.0f) return "softcap (the generic kernel has it)";
  const DLTensor* dout = c->tensors[XHAL_ATTENTION_BACKWARD_DOUT];
  if (reinterpret_cast<uintptr_t>(dout->data) % 16 != 0) return "dout not 16-byte aligned";
  if (dout->strides[dout->ndim - 3] > (int64_t(1) << 24)) return "dout's sequence stride above 2^24 elements";
  const int64_t batch = c->op == XHAL_OP_ATTENTION_VARLEN_BACKWARD
                            ? c->tensors[XHAL_ATTENTION_VARLEN_BACKWARD_CU_SEQLENS_Q]->shape[0] - 1
                            : q->shape[0];
  if (batch > 65535) return "more than 65535 sequences (a grid dimension)";
  for (int d = 0; d + 1 < dout->ndim; ++d) {
    if ((dout->strides[d] * 2) % 16 != 0) return "dout strides not multiples of 8 elements";
  }
  for (const DLTensor* g : {c->tensors[XHAL_ATTENTION_BACKWARD_DK], c->tensors[XHAL_ATTENTION_BACKWARD_DV]}) {
    if (reinterpret_cast<uintptr_t>(g->data) % 4 != 0) return "dk or dv not 4-byte aligned";
    for (int d = 0; d + 1 < g->ndim; ++d) {
      if (g->strides[d] % 2 != 0) return "dk or dv strides not even";
    }
  }
  return nullptr;
}

}  // namespace xhal::gpu::attention_backward

#endif

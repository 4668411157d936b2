// Tensor-core flash attention for f16/bf16 on NVIDIA (mma.sync, sm_80+), FlashAttention-2 style.
// A block of 4 warps owns 64 * R query rows of one (sequence, head), 16 * R rows per warp (each
// K/V fragment loaded from shared memory feeds R row tiles, and each K/V tile loaded from memory
// serves 64 * R rows), and streams
// K/V tiles of kBlockN keys through shared memory. Scores, the online softmax (exp2, log2(e) folded into the scale)
// and the output accumulator stay in registers; P is fed to the second mma straight from the
// accumulators of the first. K and V tiles are double-buffered: tile t+1 loads (cp.async) while
// tile t is used. Only the key tiles some row of the block can see are visited, so a
// causal or windowed call skips the rest. Shared rows are padded by 16 bytes, which keeps
// ldmatrix and cp.async free of bank conflicts.
#pragma once

#if !defined(__HIPCC__)

#include "attention_layout.cuh"
#include "flash_rows.cuh"
#include "mma_sm80.cuh"

namespace xhal::gpu {

template <int D_, int BlockN_, int RowTiles_, int Warps_ = 4, int MinBlocks_ = 1>
struct FlashTile {
  static constexpr int D = D_, kBlockN = BlockN_, kRowTiles = RowTiles_, kWarps = Warps_;
  static constexpr int kThreads = 32 * kWarps, kMinBlocks = MinBlocks_;
  static constexpr int kBlockM = 16 * kWarps * kRowTiles;
  static constexpr int kStride = D + 8;  // shared row, in elements
  static constexpr int kKSteps = D / 16, kSTiles = kBlockN / 8, kOTiles = D / 8;
  static constexpr bool kQInRegisters = kRowTiles == 1 && D <= 128 && kWarps == 4;
  static constexpr size_t kSharedBytes = size_t(kBlockM + 4 * kBlockN) * kStride * 2;  // K, V: 2 stages
  static_assert(D % 16 == 0 && kBlockN % 16 == 0, "tile sizes are multiples of the mma shape");
};

// rows [first, first + kRows) of a [*, D] tile, row r at base + r * stride; rows >= limit are
// zero-filled (their scores are masked; zeros keep NaN garbage out of P V).
template <class T, int kRows, int D, int kStride, int kThreads>
__device__ inline void load_tile(T* shared, const T* base, int64_t stride, int64_t first, int64_t limit) {
  // Offsets within the tile in 32 bits (flash_supports bounds the stride) and a loop of known trip
  // count: fewer instructions per copy than 64-bit address arithmetic in a generic loop.
  constexpr int kChunks = D / 8, kTotal = kRows * kChunks, kIters = (kTotal + kThreads - 1) / kThreads;
  const T* tile = base + first * stride;
  const int rows_left = limit - first < kRows ? int(limit - first) : kRows;
  const int stride32 = int(stride);
#pragma unroll
  for (int i = 0; i < kIters; ++i) {
    const int c = threadIdx.x + i * kThreads;
    if (kTotal % kThreads != 0 && c >= kTotal) break;
    const int r = c / kChunks, ch = c % kChunks;
    const bool valid = r < rows_left;
    sm80::cp_async_16(shared + r * kStride + ch * 8, (valid ? tile + r * stride32 : base) + ch * 8, valid);
  }
}

// load_tile for a paged cache: row r is key first + r of sequence b, in the block the table names
// (rows >= limit, and rows of a block outside the cache, zero-filled). head_base: the kv head's row
// of block 0; s: the cache's block, slot and head strides.
template <class T, int kRows, int D, int kStride, int kThreads>
__device__ inline void load_paged_tile(T* shared, const T* head_base, const int64_t (&s)[3], const KeyPages& pages,
                                       int64_t b, int64_t first, int64_t limit) {
  constexpr int kChunks = D / 8, kTotal = kRows * kChunks, kIters = (kTotal + kThreads - 1) / kThreads;
#pragma unroll
  for (int i = 0; i < kIters; ++i) {
    const int c = threadIdx.x + i * kThreads;
    if (kTotal % kThreads != 0 && c >= kTotal) break;
    const int r = c / kChunks, ch = c % kChunks;
    const int64_t key = first + r;
    const T* row = nullptr;
    if (key < limit) row = pages.row(head_base, s, b, key, 0);
    sm80::cp_async_16(shared + r * kStride + ch * 8, (row != nullptr ? row : head_base) + ch * 8, row != nullptr);
  }
}

// For an edge tile (FlashBlock::edge_tile): replaces the infinities and NaNs among the V chunks this
// thread copied with load_tile (the same rows and chunks) by 0; true when there were any.
template <class E, int kRows, int D, int kStride, int kThreads>
__device__ inline bool zero_own_non_finite(typename E::T* shared, int64_t first, int64_t limit) {
  constexpr int kChunks = D / 8, kTotal = kRows * kChunks, kIters = (kTotal + kThreads - 1) / kThreads;
  const int rows_left = limit - first < kRows ? int(limit - first) : kRows;
  bool any = false;
#pragma unroll
  for (int i = 0; i < kIters; ++i) {
    const int c = threadIdx.x + i * kThreads;
    if (kTotal % kThreads != 0 && c >= kTotal) break;
    const int r = c / kChunks, ch = c % kChunks;
    if (r < rows_left) any |= zero_non_finite<E>(shared + r * kStride + ch * 8);
  }
  return any;
}

// kSoftcap: scores pass through softcap * tanh(score / softcap); a separate instantiation keeps
// that code (and its branches) out of the common kernel. kPaged: k and v are paged caches read
// through `pages` (paged_prefill), also its own instantiation (the table's arithmetic would cost
// the dense kernels registers).
template <class E, class Tile, bool kSoftcap, bool kPaged = false>
__global__ void __launch_bounds__(Tile::kThreads, Tile::kMinBlocks)
    flash_attention_kernel(const typename E::T* __restrict__ q, const typename E::T* __restrict__ k,
                           const typename E::T* __restrict__ v, typename E::T* __restrict__ out,
                           float* __restrict__ lse, AttnLayout a, Sequences seqs, Mask mask, int64_t m_tiles,
                           KeyPages pages) {
  using T = typename E::T;
  constexpr int D = Tile::D, kBlockM = Tile::kBlockM, kBlockN = Tile::kBlockN;
  constexpr int kStride = Tile::kStride, kThreads = Tile::kThreads;
  extern __shared__ __align__(16) unsigned char shared_raw[];
  T* sQ = reinterpret_cast<T*>(shared_raw);
  T* sK = sQ + kBlockM * kStride;  // [2][kBlockN][kStride]
  T* sV = sK + 2 * kBlockN * kStride;  // [2][kBlockN][kStride]

  FlashBlock<T> blk;
  if (!blk.locate(a, seqs, mask, m_tiles, kBlockM, kBlockN)) return;
  blk.bases(q, k, v, a, kPaged);
  const int64_t i0 = blk.i0, Sq = blk.Sq, Sk = blk.Sk, kv_begin = blk.kv_begin, kv_end = blk.kv_end;
  const T *qb = blk.qb, *kb = blk.kb, *vb = blk.vb;

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, group = lane / 4;
  constexpr int R = Tile::kRowTiles;
  constexpr int W = Tile::kWarps;
  // Row tile r of this warp is tile r * W + warp of the block: rows i0 + (r * W + warp) * 16 + ...
  // Visible key ranges are kept relative to kv_begin, in 32 bits (a sequence's keys fit in int32:
  // flash_supports).
  int64_t row_index[R][2];
  SoftmaxRows rows[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    row_index[r][0] = i0 + (r * W + warp) * 16 + group;
    row_index[r][1] = row_index[r][0] + 8;
    rows[r].set_ranges(mask, row_index[r], Sq, Sk, kv_begin);
  }

  load_tile<T, kBlockM, D, kStride, kThreads>(sQ, qb, a.q[1], i0, Sq);
  if (kv_begin < kv_end) {
    if constexpr (kPaged) {
      load_paged_tile<T, kBlockN, D, kStride, kThreads>(sK, kb, a.k, pages, blk.b, kv_begin, Sk);
      load_paged_tile<T, kBlockN, D, kStride, kThreads>(sV, vb, a.v, pages, blk.b, kv_begin, Sk);
    } else {
      load_tile<T, kBlockN, D, kStride, kThreads>(sK, kb, a.k[1], kv_begin, Sk);
      load_tile<T, kBlockN, D, kStride, kThreads>(sV, vb, a.v[1], kv_begin, Sk);
    }
  }
  sm80::cp_async_commit();
  sm80::cp_async_wait<0>();
  __syncthreads();

  // ldmatrix row addresses of this lane (see mma_sm80.cuh for the fragment layouts).
  const T* q_row = sQ + (warp * 16 + lane % 8 + (lane / 8 % 2) * 8) * kStride + (lane / 16) * 8;
  const T* k_row = sK + (lane % 8 + (lane / 16) * 8) * kStride + (lane / 8 % 2) * 8;
  const T* v_row = sV + (lane % 8 + (lane / 8 % 2) * 8) * kStride + (lane / 16) * 8;
  constexpr int kRowTileStride = 16 * W * kStride;  // from row tile r to r + 1 of this warp

  uint32_t qf[Tile::kQInRegisters ? Tile::kKSteps : 1][4];
  if constexpr (Tile::kQInRegisters) {
#pragma unroll
    for (int kk = 0; kk < Tile::kKSteps; ++kk) sm80::ldmatrix_x4(qf[kk], q_row + kk * 16);
  }

  float o[R][Tile::kOTiles][4];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int t = 0; t < Tile::kOTiles; ++t) o[r][t][0] = o[r][t][1] = o[r][t][2] = o[r][t][3] = 0.0f;
  const ScoreScale scale(mask);

  // The keys [bad_begin, bad_end) (relative to kv_begin) span the edge tiles whose V had
  // non-finite values zeroed; added back once, after the loop (add_non_finite_values).
  int bad_begin = -1, bad_end = -1;
  int stage = 0;
  for (int64_t j0 = kv_begin; j0 < kv_end; j0 += kBlockN, stage ^= 1) {
    if (j0 + kBlockN < kv_end) {  // the next tile loads while this one is used
      const int next = (stage ^ 1) * kBlockN * kStride;
      if constexpr (kPaged) {
        load_paged_tile<T, kBlockN, D, kStride, kThreads>(sK + next, kb, a.k, pages, blk.b, j0 + kBlockN, Sk);
        load_paged_tile<T, kBlockN, D, kStride, kThreads>(sV + next, vb, a.v, pages, blk.b, j0 + kBlockN, Sk);
      } else {
        load_tile<T, kBlockN, D, kStride, kThreads>(sK + next, kb, a.k[1], j0 + kBlockN, Sk);
        load_tile<T, kBlockN, D, kStride, kThreads>(sV + next, vb, a.v[1], j0 + kBlockN, Sk);
      }
      sm80::cp_async_commit();
      sm80::cp_async_wait<1>();
    } else {
      sm80::cp_async_wait<0>();
    }
    // A thread's own cp.async copies are complete here; in an edge tile (the same for the whole
    // block) each checks those of V, and the barrier tells all whether any held a non-finite value.
    bool non_finite = false;
    if (blk.edge_tile(int(j0 - kv_begin), kBlockN)) {
      non_finite = __syncthreads_or(
          zero_own_non_finite<E, kBlockN, D, kStride, kThreads>(sV + stage * kBlockN * kStride, j0, Sk));
    } else {
      __syncthreads();
    }
    const T* k_stage = k_row + stage * kBlockN * kStride;
    const T* v_stage = v_row + stage * kBlockN * kStride;

    float s[R][Tile::kSTiles][4];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int t = 0; t < Tile::kSTiles; ++t) s[r][t][0] = s[r][t][1] = s[r][t][2] = s[r][t][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < Tile::kKSteps; ++kk) {
      uint32_t af[R][4];
#pragma unroll
      for (int r = 0; r < R; ++r) {
        if constexpr (Tile::kQInRegisters) {
          af[r][0] = qf[kk][0], af[r][1] = qf[kk][1], af[r][2] = qf[kk][2], af[r][3] = qf[kk][3];
        } else {
          sm80::ldmatrix_x4(af[r], q_row + r * kRowTileStride + kk * 16);
        }
      }
#pragma unroll
      for (int p = 0; p < Tile::kSTiles / 2; ++p) {
        uint32_t bf[4];
        sm80::ldmatrix_x4(bf, k_stage + p * 16 * kStride + kk * 16);
#pragma unroll
        for (int r = 0; r < R; ++r) {
          sm80::mma_16816<E>(s[r][2 * p], af[r], bf[0], bf[1]);
          sm80::mma_16816<E>(s[r][2 * p + 1], af[r], bf[2], bf[3]);
        }
      }
    }

#pragma unroll
    for (int r = 0; r < R; ++r) {
      float correction[2];
      online_softmax<kSoftcap>(s[r], rows[r], int(j0 - kv_begin), scale, correction);
      rescale(o[r], correction);
    }

#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) {
      uint32_t pa[R][4];
#pragma unroll
      for (int r = 0; r < R; ++r) probabilities_as_a<E>(s[r], kk, pa[r]);
#pragma unroll
      for (int p = 0; p < Tile::kOTiles / 2; ++p) {
        uint32_t bf[4];
        sm80::ldmatrix_x4_trans(bf, v_stage + kk * 16 * kStride + p * 16);
#pragma unroll
        for (int r = 0; r < R; ++r) {
          sm80::mma_16816<E>(o[r][2 * p], pa[r], bf[0], bf[1]);
          sm80::mma_16816<E>(o[r][2 * p + 1], pa[r], bf[2], bf[3]);
        }
      }
    }
    if (non_finite) {  // rare: V of an edge tile held infinities or NaNs, zeroed above
      if (bad_begin < 0) bad_begin = int(j0 - kv_begin);
      bad_end = int(j0 - kv_begin) + kBlockN;
    }
    __syncthreads();  // this stage is reloaded by the next iteration but one
  }
  if (bad_begin >= 0) {
    const int n = (kv_end - kv_begin < bad_end ? int(kv_end - kv_begin) : bad_end) - bad_begin;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      add_non_finite_values<kPaged>(o[r], rows[r], bad_begin, n, [&](int j) {
        const int64_t key = kv_begin + bad_begin + j;
        if constexpr (kPaged) return pages.row(vb, a.v, blk.b, key, 0);
        return vb + key * a.v[1];
      });
    }
  }

#pragma unroll
  for (int r = 0; r < R; ++r)
    store_rows<E>(o[r], rows[r], scale.max_to_log2<kSoftcap>(), row_index[r], Sq, out, a, blk.b, blk.head, blk.q0, lse);
}

template <class E, class Tile, bool kSoftcap>
struct MmaFlashKernels {
  static constexpr auto kernel = &flash_attention_kernel<E, Tile, kSoftcap>;
};

template <class E, class Tile, bool kSoftcap>
struct MmaPagedFlashKernels {
  static constexpr auto kernel = &flash_attention_kernel<E, Tile, kSoftcap, true>;
};

}  // namespace xhal::gpu

#endif

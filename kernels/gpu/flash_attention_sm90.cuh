// Flash attention on Hopper's warpgroup MMA (wgmma, sm_90a) for f16/bf16, D = 64 or 128.
// A block of two warpgroups owns 128 query rows of one (sequence, head), 64 per warpgroup, and
// streams K/V tiles of kBlockN keys through shared memory (cp.async, double-buffered, 128-byte
// swizzled as wgmma reads them). S = Q Kᵀ takes both operands from shared memory; the online
// softmax (flash_rows.cuh, shared with the mma.sync kernel) runs on the accumulators, and
// O += P V takes P straight from registers and V, read transposed, from shared memory.
#pragma once

#if !defined(__HIPCC__)

#include "flash_rows.cuh"
#include "wgmma_sm90.cuh"

namespace xhal::gpu {

// Two stages of K and V; MinBlocks blocks per multiprocessor (two keep one block's tensor cores
// busy while the other runs its softmax: measured 8% faster than one block of 128-key tiles, and
// 4% faster than one block computing the next tile's scores during P V).
template <int D_, int BlockN_, int MinBlocks_>
struct WgmmaFlashTile {
  static constexpr int D = D_, kBlockN = BlockN_, kMinBlocks = MinBlocks_;
  static constexpr int kWarpGroups = 2, kThreads = 128 * kWarpGroups, kBlockM = 64 * kWarpGroups;
  static constexpr int kSTiles = kBlockN / 8, kOTiles = D / 8, kKSteps = D / 16, kPSteps = kBlockN / 16;
  static constexpr int kQBytes = kBlockM * D * 2, kKVBytes = kBlockN * D * 2;
  // Q, then K and V per stage, and 1 KiB of slack to align the tiles for the swizzle.
  static constexpr size_t kSharedBytes = size_t(kQBytes) + 4 * size_t(kKVBytes) + 1024;
  static_assert(D == 64 || D == 128, "one or two 64-column blocks");
  static_assert(kBlockN == 64 || kBlockN == 128, "wgmma N of the score tile");
};

// Rows [first, first + kRows) of a [*, D] 16-bit tile into the swizzled layout (wgmma_sm90.cuh);
// rows >= limit are zero-filled.
template <class T, int kRows, int D, int kThreads>
__device__ inline void load_tile_swizzled(unsigned char* shared, const T* base, int64_t stride,
                                          int64_t first, int64_t limit) {
  constexpr int kChunks = D / 8, kTotal = kRows * kChunks;
  static_assert(kTotal % kThreads == 0, "whole copies per thread");
  const T* tile = base + first * stride;
  const int rows_left = limit - first < kRows ? int(limit - first) : kRows;
  const int stride32 = int(stride);
#pragma unroll
  for (int i = 0; i < kTotal / kThreads; ++i) {
    const int c = threadIdx.x + i * kThreads;
    const int r = c / kChunks, ch = c % kChunks;
    const bool valid = r < rows_left;
    sm80::cp_async_16(shared + sm90::swizzled_offset<kRows>(r, ch * 8, 2),
                      (valid ? tile + r * stride32 : base) + ch * 8, valid);
  }
}

template <class E, class Tile, bool kSoftcap>
__global__ void __launch_bounds__(Tile::kThreads, Tile::kMinBlocks)
    flash_attention_wgmma_kernel(const typename E::T* __restrict__ q, const typename E::T* __restrict__ k,
                                 const typename E::T* __restrict__ v, typename E::T* __restrict__ out,
                                 float* __restrict__ lse, AttnLayout a, Sequences seqs, Mask mask,
                                 int64_t m_tiles) {
#if XHAL_WGMMA_DEVICE
  using T = typename E::T;
  constexpr int D = Tile::D, kBlockM = Tile::kBlockM, kBlockN = Tile::kBlockN;
  constexpr int kThreads = Tile::kThreads;
  extern __shared__ unsigned char shared_raw[];
  unsigned char* sQ = shared_raw + (1024 - sm80::smem_address(shared_raw) % 1024) % 1024;
  unsigned char* sK = sQ + Tile::kQBytes;        // [2 stages]
  unsigned char* sV = sK + 2 * Tile::kKVBytes;  // [2 stages]

  FlashBlock<T> blk;
  if (!blk.locate(q, k, v, a, seqs, mask, m_tiles, kBlockM, kBlockN)) return;

  const int wg = threadIdx.x / 128, warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;
  const int64_t first_row = blk.i0 + wg * 64 + warp * 16 + lane / 4;
  const int64_t row_index[2] = {first_row, first_row + 8};
  SoftmaxRows rows;
  rows.set_ranges(mask, row_index, blk.Sq, blk.Sk, blk.kv_begin);
  const ScoreScale scale(mask);
  const int64_t tiles = (blk.kv_end - blk.kv_begin + kBlockN - 1) / kBlockN;

  // Key tile t (relative to kv_begin) into stage `stage`; one cp.async group per call.
  auto load_kv = [&](int64_t t, int stage) {
    const int64_t j0 = blk.kv_begin + t * kBlockN;
    load_tile_swizzled<T, kBlockN, D, kThreads>(sK + stage * Tile::kKVBytes, blk.kb, a.k[1], j0, blk.Sk);
    load_tile_swizzled<T, kBlockN, D, kThreads>(sV + stage * Tile::kKVBytes, blk.vb, a.v[1], j0, blk.Sk);
  };
  // S = Q Kᵀ (issued, not waited for): K-major operands, 16 columns of D per step (32 bytes into
  // a 128-byte row); this warpgroup's 64 rows of each Q column block.
  const unsigned char* q_rows = sQ + wg * 64 * 128;
  auto issue_scores = [&](float (&s)[Tile::kSTiles][4], int stage) {
    const unsigned char* k_tile = sK + stage * Tile::kKVBytes;
    sm90::fence();
#pragma unroll
    for (int kk = 0; kk < Tile::kKSteps; ++kk) {
      const int block = kk / 4, within = (kk % 4) * 32;
      sm90::mma_ss<E, kBlockN>(s, sm90::descriptor(q_rows + block * kBlockM * 128 + within, 16, 1024),
                               sm90::descriptor(k_tile + block * kBlockN * 128 + within, 16, 1024), kk > 0);
    }
    sm90::commit();
  };
  // O += P V (issued, not waited for): V read transposed (MN-major), 16 keys per step, one
  // 64-column block per wgmma.
  float o[Tile::kOTiles][4];
#pragma unroll
  for (int t = 0; t < Tile::kOTiles; ++t) o[t][0] = o[t][1] = o[t][2] = o[t][3] = 0.0f;
  auto issue_accumulate = [&](const uint32_t (&p)[Tile::kPSteps][4], int stage) {
    const unsigned char* v_tile = sV + stage * Tile::kKVBytes;
    sm90::pin(o);
    sm90::fence();
#pragma unroll
    for (int kk = 0; kk < Tile::kPSteps; ++kk) {
      const unsigned char* v_keys = v_tile + kk * 16 * 128;
      sm90::mma_rs_n64<E, 0>(o, p[kk], sm90::descriptor(v_keys, kBlockN * 128, 1024));
      if constexpr (D == 128) {
        sm90::mma_rs_n64<E, 8>(o, p[kk], sm90::descriptor(v_keys + kBlockN * 128, kBlockN * 128, 1024));
      }
    }
    sm90::commit();
  };
  // P of a softmaxed score tile, whole, as wgmma A operands (converted before any wgmma reads it).
  auto probabilities = [&](const float (&s)[Tile::kSTiles][4], uint32_t (&p)[Tile::kPSteps][4]) {
#pragma unroll
    for (int kk = 0; kk < Tile::kPSteps; ++kk) probabilities_as_a<E>(s, kk, p[kk]);
  };
  auto landed = [&] {  // this thread's copies and then everyone's are visible to wgmma
    sm90::fence_shared_for_async();
    __syncthreads();
  };

  load_tile_swizzled<T, kBlockM, D, kThreads>(sQ, blk.qb, a.q[1], blk.i0, blk.Sq);
  if (tiles > 0) load_kv(0, 0);
  sm80::cp_async_commit();
  float s[Tile::kSTiles][4];
  uint32_t p[Tile::kPSteps][4];
  float correction[2];
  for (int64_t t = 0; t < tiles; ++t) {
    const int stage = int(t % 2);
    if (t + 1 < tiles) {  // the next tile loads while this one is used
      load_kv(t + 1, stage ^ 1);
      sm80::cp_async_commit();
      sm80::cp_async_wait<1>();
    } else {
      sm80::cp_async_wait<0>();
    }
    landed();
    issue_scores(s, stage);
    sm90::wait<0>();
    sm90::pin(s);
    online_softmax<kSoftcap>(s, rows, int(t * kBlockN), scale, correction);
    rescale(o, correction);
    probabilities(s, p);
    issue_accumulate(p, stage);
    sm90::wait<0>();
    sm90::pin(o);
    __syncthreads();  // this stage is reloaded by the next iteration
  }

  store_rows<E>(o, rows, row_index, blk.Sq, out, a, blk.b, blk.head, blk.q0, lse);
#endif
}

template <class E, class Tile, bool kSoftcap>
struct WgmmaFlashKernels {
  static constexpr auto kernel = &flash_attention_wgmma_kernel<E, Tile, kSoftcap>;
};

}  // namespace xhal::gpu

#endif

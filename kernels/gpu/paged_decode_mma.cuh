// The paged decode kernel on tensor cores (NVIDIA, sm_80+). Like paged_decode.cuh, one block per
// (context split, kv head, sequence) serves the Hq/Hkv query heads of the kv head, with K/V tiles
// of kTileKeys keys gathered through the block table by cp.async two stages deep. The query heads
// are the rows of one 16-row mma tile (rows past the group are zero), so Q K^T and P V run on
// mma.sync; each warp takes 16 keys of a tile with its own running max and sum, and the four
// warps' partial results are merged through shared memory at the end.
#pragma once

#if !defined(__HIPCC__)

#include "mma_sm80.cuh"
#include "paged_decode.cuh"

namespace xhal::gpu {

inline constexpr int kMmaDecodeMaxGroup = 16;

// Shared bytes: q and the K and V tiles of two stages, or the warps' partial results at the end.
inline size_t paged_decode_mma_shared_bytes(int64_t D, int64_t Dv) {
  const size_t tiles = 16 * size_t(D + 8) * 2 + 2 * kTileKeys * size_t(D + 8 + Dv + 8) * 2;
  const size_t merge = 4 * 16 * size_t(Dv) * 4 + 2 * 4 * 16 * 4;  // reuses the tile space
  return tiles > merge ? tiles : merge;
}

// The block's end: the four warps each left, for `rows` query-head rows, a running max (log2
// units), a sum and an unnormalised output (sM[4][rows], sL[4][rows], sO[4][rows][Dv]); merged and
// scaled by `v_scale`, they are the output (one split) or a normalised partial output and its
// log-sum-exp (several).
template <class E>
__device__ inline void paged_decode_finish(const PagedDecodeArgs& a, const float* sO, const float* sM, const float* sL,
                                           int rows, int Dv, int64_t b, int64_t hk, int64_t split, float v_scale) {
  constexpr float kLn2 = 0.6931471805599453f;
  for (int64_t x = threadIdx.x; x < a.group * Dv; x += kDecodeThreads) {
    const int r = int(x / Dv), d = int(x % Dv);
    float m = -INFINITY;
    for (int w = 0; w < 4; ++w) m = fmaxf(m, sM[w * rows + r]);
    const float base = m == -INFINITY ? 0.0f : m;
    float num = 0.0f, den = 0.0f;
    for (int w = 0; w < 4; ++w) {
      const float f = sm80::fast_exp2(sM[w * rows + r] - base);
      num += f * sO[(w * rows + r) * Dv + d];
      den += f * sL[w * rows + r];
    }
    const float value = den == 0.0f ? 0.0f : num / den * v_scale;  // no visible key: 0; NaN stays NaN
    const int64_t head = hk * a.group + r;
    if (a.splits == 1) {
      static_cast<typename E::T*>(a.out)[b * a.o_batch + head * a.o_head + d] = E::store(value);
    } else {
      a.part_out[((b * a.Hq + head) * a.splits + split) * Dv + d] = value;
      if (d == 0) {
        a.part_lse[(b * a.Hq + head) * a.splits + split] = den == 0.0f ? -INFINITY : m * kLn2 + logf(den);
      }
    }
  }
}

template <class E, int D, int Dv>
__global__ void __launch_bounds__(kDecodeThreads) paged_decode_mma_kernel(PagedDecodeArgs a) {
  using T = typename E::T;
  constexpr int kKStride = D + 8, kVStride = Dv + 8, kKSteps = D / 16, kOTiles = Dv / 8;
  const int64_t split = blockIdx.x, hk = blockIdx.y, b = blockIdx.z, G = a.group;
  extern __shared__ __align__(16) unsigned char shared_raw[];
  T* sQ = reinterpret_cast<T*>(shared_raw);  // [16][D + 8]
  T* sK = sQ + 16 * kKStride;  // [2][kTileKeys][D + 8]
  T* sV = sK + 2 * kTileKeys * kKStride;  // [2][kTileKeys][Dv + 8]

  int64_t begin, end;
  split_keys(a, b, split, &begin, &end);
  const int32_t* table = a.table + b * a.table_row;
  const T* kh = static_cast<const T*>(a.k) + hk * a.k_head;
  const T* vh = static_cast<const T*>(a.v) + hk * a.v_head;

  // Q rows 0..G-1 are the group's heads, the rest zero.
  for (int c = threadIdx.x; c < 16 * (D / 8); c += kDecodeThreads) {
    const int r = c / (D / 8), ch = c % (D / 8);
    const T* src = static_cast<const T*>(a.q) + b * a.q_batch + (hk * G + (r < G ? r : 0)) * a.q_head + ch * 8;
    sm80::cp_async_16(sQ + r * kKStride + ch * 8, src, r < G);
  }
  // Each thread copies one 16-byte chunk of K and of V for every kRowsPerPass-th key of the tile:
  // one block-table read per key and no divisions in the copy loop.
  constexpr int kPerChunk = 8;
  constexpr int kChunks = D / kPerChunk, kRowsPerPass = kDecodeThreads / kChunks;
  static_assert(D == Dv, "one chunk layout for K and V");
  const int my_row = threadIdx.x / kChunks, my_chunk = threadIdx.x % kChunks;
  auto load_tile = [&](int64_t j0, int s) {
    if (my_row < kRowsPerPass) {
      for (int r = my_row; r < kTileKeys; r += kRowsPerPass) {
        const PagedKey key = paged_key(a, table, j0 + r, end);
        sm80::cp_async_16(sK + (s * kTileKeys + r) * kKStride + my_chunk * kPerChunk,
                          kh + key.block * a.k_block + key.slot * a.k_slot + my_chunk * kPerChunk, key.valid);
        sm80::cp_async_16(sV + (s * kTileKeys + r) * kVStride + my_chunk * kPerChunk,
                          vh + key.block * a.v_block + key.slot * a.v_slot + my_chunk * kPerChunk, key.valid);
      }
    }
    sm80::cp_async_commit();
  };

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, group = lane / 4, tig = lane % 4;
  if (begin < end)
    load_tile(begin, 0);
  else
    sm80::cp_async_commit();
  sm80::cp_async_wait<0>();
  __syncthreads();
  uint32_t qf[kKSteps][4];
  const T* q_row = sQ + (lane % 8 + (lane / 8 % 2) * 8) * kKStride + (lane / 16) * 8;
#pragma unroll
  for (int kk = 0; kk < kKSteps; ++kk) sm80::ldmatrix_x4(qf[kk], q_row + kk * 16);

  float o[kOTiles][4];
#pragma unroll
  for (int t = 0; t < kOTiles; ++t) o[t][0] = o[t][1] = o[t][2] = o[t][3] = 0.0f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.0f, 0.0f};
  constexpr float kLog2e = 1.4426950408889634f;
  const float qk_scale = a.mask.scale, scale_log2 = qk_scale * kLog2e;

  int stage = 0;
  for (int64_t j0 = begin; j0 < end; j0 += kTileKeys, stage ^= 1) {
    if (j0 + kTileKeys < end) {
      load_tile(j0 + kTileKeys, stage ^ 1);
      sm80::cp_async_wait<1>();
    } else {
      sm80::cp_async_wait<0>();
    }
    __syncthreads();
    // This warp's 16 keys of the tile.
    const T* k_row = sK + (stage * kTileKeys + warp * 16 + lane % 8 + (lane / 16) * 8) * kKStride + (lane / 8 % 2) * 8;
    float s[2][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
#pragma unroll
    for (int kk = 0; kk < kKSteps; ++kk) {
      uint32_t bf[4];
      sm80::ldmatrix_x4(bf, k_row + kk * 16);
      sm80::mma_16816<E>(s[0], qf[kk], bf[0], bf[1]);
      sm80::mma_16816<E>(s[1], qf[kk], bf[2], bf[3]);
    }
    float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int t = 0; t < 2; ++t) {
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int64_t j = j0 + warp * 16 + t * 8 + tig * 2 + (c & 1);
        float x = a.mask.softcap > 0.0f ? a.mask.softcap * tanhf(s[t][c] * qk_scale / a.mask.softcap) * kLog2e
                                        : s[t][c] * scale_log2;
        if (j >= end) x = -INFINITY;
        s[t][c] = x;
        tile_max[c / 2] = fmaxf(tile_max[c / 2], x);
      }
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      tile_max[h] = fmaxf(tile_max[h], __shfl_xor_sync(0xffffffffu, tile_max[h], 1));
      tile_max[h] = fmaxf(tile_max[h], __shfl_xor_sync(0xffffffffu, tile_max[h], 2));
      const float m_new = fmaxf(row_max[h], tile_max[h]);
      const float base = m_new == -INFINITY ? 0.0f : m_new;
      const float correction = sm80::fast_exp2(row_max[h] - base);
      row_max[h] = m_new;
      row_sum[h] *= correction;
#pragma unroll
      for (int t = 0; t < kOTiles; ++t) o[t][2 * h] *= correction, o[t][2 * h + 1] *= correction;
#pragma unroll
      for (int t = 0; t < 2; ++t) {
        s[t][2 * h] = sm80::fast_exp2(s[t][2 * h] - base);
        s[t][2 * h + 1] = sm80::fast_exp2(s[t][2 * h + 1] - base);
        row_sum[h] += s[t][2 * h] + s[t][2 * h + 1];
      }
    }
    const uint32_t pa[4] = {sm80::pack2<E>(s[0][0], s[0][1]), sm80::pack2<E>(s[0][2], s[0][3]),
                            sm80::pack2<E>(s[1][0], s[1][1]), sm80::pack2<E>(s[1][2], s[1][3])};
    const T* v_row = sV + (stage * kTileKeys + warp * 16 + lane % 8 + (lane / 8 % 2) * 8) * kVStride + (lane / 16) * 8;
#pragma unroll
    for (int p = 0; p < kOTiles / 2; ++p) {
      uint32_t bf[4];
      sm80::ldmatrix_x4_trans(bf, v_row + p * 16);
      sm80::mma_16816<E>(o[2 * p], pa, bf[0], bf[1]);
      sm80::mma_16816<E>(o[2 * p + 1], pa, bf[2], bf[3]);
    }
    __syncthreads();  // this stage is reloaded two tiles later
  }

  // Merge the four warps: each leaves its running max, sum and unnormalised output in shared memory.
  sm80::cp_async_wait<0>();
  __syncthreads();
  float* sO = reinterpret_cast<float*>(shared_raw);  // [4][16][Dv]
  float* sM = sO + 4 * 16 * Dv;  // [4][16]
  float* sL = sM + 4 * 16;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float sum = row_sum[h];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    const int r = group + h * 8;
    if (tig == 0) sM[warp * 16 + r] = row_max[h], sL[warp * 16 + r] = sum;
#pragma unroll
    for (int t = 0; t < kOTiles; ++t) {
      sO[(warp * 16 + r) * Dv + t * 8 + tig * 2] = o[t][2 * h];
      sO[(warp * 16 + r) * Dv + t * 8 + tig * 2 + 1] = o[t][2 * h + 1];
    }
  }
  __syncthreads();
  paged_decode_finish<E>(a, sO, sM, sL, 16, Dv, b, hk, split, 1.0f);
}

}  // namespace xhal::gpu

#endif

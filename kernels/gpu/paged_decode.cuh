// The paged decode kernel: one block per (split of the context, kv head, sequence) serves all
// Hq/Hkv query heads that share the kv head, so each cached K/V row is read from memory once.
// Tiles of kTileKeys keys are gathered through the block table into shared memory with cp.async,
// two stages deep (the next tile loads while this one is used). Scores and the online softmax
// are f32 (exp2, log2(e) folded into the scale). With one split the block writes the output; with
// several each writes a normalised partial output and its log-sum-exp, and a second kernel merges
// them (flash-decoding), which keeps the GPU full when batch x kv heads is small.
#pragma once

#include <cmath>
#include <cstdint>

#include "attention_layout.cuh"

#include "async_copy.cuh"
#include "kernels/split_kv_plan.hpp"

namespace xhal::gpu {

inline constexpr int kDecodeThreads = 128;
inline constexpr int kTileKeys = 64;
inline constexpr int kMaxGroupTimesDv = 8192;  // per-thread accumulators: group * Dv / (8 * 128) <= 8

struct PagedDecodeArgs {
  const void* q;
  const void* k;
  const void* v;
  const int32_t* table;
  const int32_t* lens;
  void* out;
  float* part_out;  // [B, Hq, splits, Dv] when splits > 1
  float* part_lse;  // [B, Hq, splits]
  int64_t q_batch, q_head, o_batch, o_head;
  int64_t k_block, k_slot, k_head, v_block, v_slot, v_head;
  int64_t table_row, lens_stride;
  int64_t Hq, group, D, Dv, block_size, num_blocks, max_blocks;
  int block_shift;  // log2(block_size) when it is a power of two, else -1
  int64_t splits, keys_per_split;
  Mask mask;
  // An f8_e4m3 cache's scales (paged_decode_fp8.cuh's kernel): one, or one a kv head.
  const float* k_scale = nullptr;
  const float* v_scale = nullptr;
  bool k_scale_per_head = false, v_scale_per_head = false;
};

// Shared memory: two stages of K and V tiles (rows padded by 16 bytes), q of the group in f32,
// the scores of a tile, and per-head running max, sum and correction.
inline size_t paged_decode_shared_bytes(int64_t group, int64_t D, int64_t Dv, size_t elt) {
  return 2 * kTileKeys * size_t(D + 8 + Dv + 8) * elt + size_t(group) * D * sizeof(float) +
         size_t(group) * kTileKeys * sizeof(float) + 3 * size_t(group) * sizeof(float);
}

// Keys [begin, end) of sequence b that split `split` attends: the visible range of the decode
// token (seq_lens clamped to what the block table can address), cut into keys_per_split pieces.
__device__ inline void split_keys(const PagedDecodeArgs& a, int64_t b, int64_t split, int64_t* begin, int64_t* end) {
  int64_t L = a.lens[b * a.lens_stride];
  L = L < 0 ? 0 : (L > a.max_blocks * a.block_size ? a.max_blocks * a.block_size : L);
  int64_t lo, hi;
  a.mask.visible(0, 1, L, &lo, &hi);
  *begin = lo + split * a.keys_per_split;
  *end = *begin + a.keys_per_split < hi ? *begin + a.keys_per_split : hi;
}

// Key j of a sequence (its block table row `table`) in a cache of power-of-two blocks: its block
// and slot, and whether it may be read; a key at or past `end`, or one the table places outside the
// cache, is not (block 0 then, for a zero-filled copy).
struct PagedKey {
  int64_t block, slot;
  bool valid;
};
__device__ inline PagedKey paged_key(const PagedDecodeArgs& a, const int32_t* table, int64_t j, int64_t end) {
  const int64_t block = j < end ? table[j >> a.block_shift] : -1;
  const bool valid = block >= 0 && block < a.num_blocks;
  return {valid ? block : 0, j & (a.block_size - 1), valid};
}

// 16-bit types only: K and V rows are read as vectors of 8 elements.
template <class E>
__global__ void __launch_bounds__(kDecodeThreads) paged_decode_kernel(PagedDecodeArgs a) {
  using T = typename E::T;
  static_assert(Vec<E>::kVec == 8, "the decode kernel reads 16-bit elements eight at a time");
  const int64_t split = blockIdx.x, hk = blockIdx.y, b = blockIdx.z;
  const int64_t G = a.group, D = a.D, Dv = a.Dv;
  const int64_t k_stride = D + 8, v_stride = Dv + 8;
  extern __shared__ __align__(16) unsigned char shared_raw[];
  T* sK = reinterpret_cast<T*>(shared_raw);  // [2][kTileKeys][D + 8]
  T* sV = sK + 2 * kTileKeys * k_stride;  // [2][kTileKeys][Dv + 8]
  float* sQ = reinterpret_cast<float*>(sV + 2 * kTileKeys * v_stride);  // [G][D]
  float* sS = sQ + G * D;  // [G][kTileKeys]
  float* sMax = sS + G * kTileKeys;  // [G]
  float* sSum = sMax + G;
  float* sCorr = sSum + G;

  int64_t begin, end;
  split_keys(a, b, split, &begin, &end);
  const int32_t* table = a.table + b * a.table_row;
  const T* kh = static_cast<const T*>(a.k) + hk * a.k_head;
  const T* vh = static_cast<const T*>(a.v) + hk * a.v_head;

  constexpr float kLog2e = 1.4426950408889634f;
  for (int64_t x = threadIdx.x; x < G * D; x += kDecodeThreads) {
    const int64_t g = x / D, d = x % D;
    const T* qrow = static_cast<const T*>(a.q) + b * a.q_batch + (hk * G + g) * a.q_head;
    sQ[x] = E::load(qrow[d]) * (a.mask.softcap > 0.0f ? a.mask.scale : a.mask.scale * kLog2e);
  }
  for (int64_t g = threadIdx.x; g < G; g += kDecodeThreads) sMax[g] = -INFINITY, sSum[g] = 0.0f;
  __syncthreads();  // a split without keys skips the loop's barriers: its end reads these as set

  // Gathers keys [j0, j0 + kTileKeys) of K and V into stage `s`.
  auto load_tile = [&](int64_t j0, int s) {
    const int64_t k_chunks = D / 8, v_chunks = Dv / 8;
    for (int64_t c = threadIdx.x; c < kTileKeys * (k_chunks + v_chunks); c += kDecodeThreads) {
      const bool is_k = c < kTileKeys * k_chunks;
      const int64_t cc = is_k ? c : c - kTileKeys * k_chunks, chunks = is_k ? k_chunks : v_chunks;
      const int64_t r = cc / chunks, ch = cc % chunks, j = j0 + r;
      int64_t block = j < end ? table[j / a.block_size] : -1;
      const bool valid = block >= 0 && block < a.num_blocks;
      if (!valid) block = 0;
      const int64_t slot = j % a.block_size;
      if (is_k) {
        copy16<E>(sK + (s * kTileKeys + r) * k_stride + ch * 8, kh + block * a.k_block + slot * a.k_slot + ch * 8,
                  valid);
      } else {
        copy16<E>(sV + (s * kTileKeys + r) * v_stride + ch * 8, vh + block * a.v_block + slot * a.v_slot + ch * 8,
                  valid);
      }
    }
    copy_commit();
  };

  // Per-thread output accumulators: pair p covers head g and 8 values of dv.
  constexpr int kMaxPairs = 8;
  const int64_t pairs = G * (Dv / 8);
  float acc[kMaxPairs][8];
  for (int p = 0; p < kMaxPairs; ++p)
    for (int e = 0; e < 8; ++e) acc[p][e] = 0.0f;

  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  constexpr int kWarps = kDecodeThreads / kWarpSize;
  if (begin < end) load_tile(begin, 0);
  int stage = 0;
  for (int64_t j0 = begin; j0 < end; j0 += kTileKeys, stage ^= 1) {
    if (j0 + kTileKeys < end) {
      load_tile(j0 + kTileKeys, stage ^ 1);
      copy_wait<1>();
    } else {
      copy_wait<0>();
    }
    __syncthreads();
    // Scores: thread -> key j = x % kTileKeys for heads g = x / kTileKeys, stepping by the block.
    const T* kt = sK + stage * kTileKeys * k_stride;
    for (int64_t x = threadIdx.x; x < G * kTileKeys; x += kDecodeThreads) {
      const int64_t g = x / kTileKeys, j = x % kTileKeys;
      const T* krow = kt + j * k_stride;
      const float* qg = sQ + g * D;
      float dot = 0.0f;
      for (int64_t d = 0; d < D; d += 8) {
        const Vec<E> kv = Vec<E>::load_from(krow + d);
#pragma unroll
        for (int e = 0; e < 8; ++e) dot += qg[d + e] * E::load(kv.v[e]);
      }
      float s = dot;
      if (a.mask.softcap > 0.0f) s = a.mask.softcap * tanhf(dot / a.mask.softcap) * kLog2e;
      sS[g * kTileKeys + j] = j0 + j < end ? s : -INFINITY;
    }
    __syncthreads();
    // Online softmax, one warp per head.
    for (int64_t g = warp; g < G; g += kWarps) {
      // 64-wide warps cover the tile in one value per lane.
      const float s0 = sS[g * kTileKeys + lane];
      const float s1 = kWarpSize < kTileKeys ? sS[g * kTileKeys + lane + kWarpSize] : -INFINITY;
      const float m_old = sMax[g];
      const float m_new = fmaxf(m_old, warp_max(fmaxf(s0, s1)));
      const float base = m_new == -INFINITY ? 0.0f : m_new;
      const float p0 = exp2f(s0 - base), p1 = exp2f(s1 - base);
      sS[g * kTileKeys + lane] = p0;
      if (kWarpSize < kTileKeys) sS[g * kTileKeys + lane + kWarpSize] = p1;
      const float sum = warp_sum(p0 + (kWarpSize < kTileKeys ? p1 : 0.0f));
      warp_sync();  // every lane has read sMax[g] before lane 0 writes it
      if (lane == 0) {
        const float correction = exp2f(m_old - base);
        sCorr[g] = correction;
        sSum[g] = sSum[g] * correction + sum;
        sMax[g] = m_new;
      }
    }
    __syncthreads();
    // P V: thread -> (head g, 8 values of dv) pairs.
    const T* vt = sV + stage * kTileKeys * v_stride;
    for (int p = 0; p < kMaxPairs; ++p) {
      const int64_t x = threadIdx.x + int64_t(p) * kDecodeThreads;
      if (x >= pairs) break;
      const int64_t g = x / (Dv / 8), c = x % (Dv / 8);
      const float corr = sCorr[g];
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[p][e] *= corr;
      const float* pg = sS + g * kTileKeys;
      for (int j = 0; j < kTileKeys; ++j) {
        const float pj = pg[j];
        const Vec<E> vv = Vec<E>::load_from(vt + j * v_stride + c * 8);
#pragma unroll
        for (int e = 0; e < 8; ++e) acc[p][e] += pj * E::load(vv.v[e]);
      }
    }
    __syncthreads();  // this stage is reloaded two tiles later
  }

  constexpr float kLn2 = 0.6931471805599453f;
  for (int p = 0; p < kMaxPairs; ++p) {
    const int64_t x = threadIdx.x + int64_t(p) * kDecodeThreads;
    if (x >= pairs) break;
    const int64_t g = x / (Dv / 8), c = x % (Dv / 8), h = hk * G + g;
    const float sum = sSum[g];
    const float inv = sum == 0.0f ? 0.0f : 1.0f / sum;  // no visible key: 0; NaN stays NaN
    if (a.splits == 1) {
      T* orow = static_cast<T*>(a.out) + b * a.o_batch + h * a.o_head + c * 8;
      for (int e = 0; e < 8; ++e) orow[e] = E::store(acc[p][e] * inv);
    } else {
      float* prow = a.part_out + ((b * a.Hq + h) * a.splits + split) * Dv + c * 8;
      for (int e = 0; e < 8; ++e) prow[e] = acc[p][e] * inv;
      if (c == 0) {
        a.part_lse[(b * a.Hq + h) * a.splits + split] = sum == 0.0f ? -INFINITY : sMax[g] * kLn2 + logf(sum);
      }
    }
  }
}

inline constexpr int kMergeMaxThreads = 512;
// The merge's block: a float4 load for every thread (each split's row in Dv / 4 of them), 128 to 512.
inline int paged_decode_merge_threads(int64_t splits, int64_t Dv) {
  const int64_t loads = (splits * (Dv / 4) + kWarpSize - 1) / kWarpSize * kWarpSize;
  return int(loads < 128 ? 128 : (loads > kMergeMaxThreads ? kMergeMaxThreads : loads));
}

// Merges the splits of each (sequence, query head), one block each: weights exp(lse_s - lse). Every
// step is spread over the threads: the splits' max and weights (into shared memory), then groups of
// Dv/4 threads (a float4 of the row each) that take every groups-th split's row, their sums
// meeting in shared memory. The block is as large as the rows' float4s (up to 512 threads), so
// one long sequence's dozens of rows load at once: a walk over the splits in each thread waits
// for one row at a time (ten microseconds for 49 splits).
template <class E>
__global__ void __launch_bounds__(kMergeMaxThreads) paged_decode_merge_kernel(PagedDecodeArgs a) {
  __shared__ float weights[kernels::kMaxSplitKvPieces];
  __shared__ float4 group_sums[kMergeMaxThreads];
  __shared__ float scratch[kMergeMaxThreads / kWarpSize];
  const int threads = int(blockDim.x);
  const int64_t bh = blockIdx.x, b = bh / a.Hq, h = bh % a.Hq;
  const float* lse = a.part_lse + bh * a.splits;
  // A NaN partial (its scores NaN) makes the result NaN: the max must not pass over it.
  float m = -INFINITY, nans = 0.0f;
  for (int64_t s = threadIdx.x; s < a.splits; s += threads) {
    const float l = lse[s];
    weights[s] = l;
    m = fmaxf(m, l), nans += isnan(l) ? 1.0f : 0.0f;
  }
  m = block_max(m, scratch);
  if (block_sum(nans, scratch) > 0.0f) m = NAN;
  float total = 0.0f;
  for (int64_t s = threadIdx.x; s < a.splits; s += threads) {
    const float l = weights[s], w = l == -INFINITY ? 0.0f : __expf(l - m);
    weights[s] = w, total += w;
  }
  total = block_sum(total, scratch);  // its barriers also publish the weights

  const int chunks = int(a.Dv / 4), groups = threads / chunks;  // Dv <= 256: two groups or more
  const int group = int(threadIdx.x) / chunks, chunk = int(threadIdx.x) % chunks;
  float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (group < groups) {
    const float4* rows = reinterpret_cast<const float4*>(a.part_out + bh * a.splits * a.Dv) + chunk;
#pragma unroll 4
    for (int64_t s = group; s < a.splits; s += groups) {
      const float4 p = rows[s * chunks];
      const float w = weights[s];
      if (w != 0.0f) sum.x += w * p.x, sum.y += w * p.y, sum.z += w * p.z, sum.w += w * p.w;
    }
  }
  group_sums[threadIdx.x] = sum;
  __syncthreads();
  const float* sums = reinterpret_cast<const float*>(group_sums);  // [groups][Dv]
  typename E::T* orow = static_cast<typename E::T*>(a.out) + b * a.o_batch + h * a.o_head;
  for (int64_t d = threadIdx.x; d < a.Dv; d += threads) {
    float v = 0.0f;
    for (int g = 0; g < groups; ++g) v += sums[g * a.Dv + d];
    orow[d] = E::store(total == 0.0f ? 0.0f : v / total);
  }
}

}  // namespace xhal::gpu

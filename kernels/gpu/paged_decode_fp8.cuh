// The paged decode kernel over an f8_e4m3 cache (NVIDIA, sm_89+), with the keys as the mma's rows.
// One block per (context split, kv head, sequence), four warps, tiles of kTileKeys keys gathered as
// codes through the block table by cp.async, kFp8Stages deep. Each warp takes 16 keys of a tile:
//   S^T = K Q^T   A = the keys' codes, converted in registers; B = the group's query heads (8 or 16)
//   O^T += V^T P^T  A = the values' codes, converted in registers; B = P^T, the scores' C fragments
//                   transposed by movmatrix
// Codes go from shared memory to the fragments with 16-byte loads and one conversion per two
// (e4m3 is exact in f16), never through a 16-bit tile: the f16 tile of the 16-bit kernel would
// cost the memory-bound loop more instructions than the halved bytes save. The order of the sum
// over d and over keys is free, so each thread's fragment slots are mapped to bytes it reads
// together: within 16 keys, slot m is key pi(m) = 4 * (m % 8 / 2) + m % 2 + 2 * (m / 8), which
// makes the four keys a thread's value fragment needs four neighbouring rows.
// All operands are f16 (P is more precise in f16 than in bf16); a bf16 query row is scaled by a
// power of two into f16's range before it is converted (exact; the score's scale undoes it).
#pragma once

#if !defined(__HIPCC__)

#include <cuda_fp8.h>

#include "paged_decode_mma.cuh"

namespace xhal::gpu {

inline constexpr int kFp8DecodeMaxGroup = 16;
inline constexpr int kFp8Stages = 3;

// Shared bytes: the stages of K and V codes, or the warps' partial results at the end.
inline size_t paged_decode_fp8_shared_bytes(int64_t D, int64_t group) {
  const size_t heads = group > 8 ? 16 : 8;
  const size_t stages = size_t(kFp8Stages) * 2 * kTileKeys * size_t(D);
  const size_t merge = 4 * heads * size_t(D) * 4 + 2 * 4 * heads * 4;
  return stages > merge ? stages : merge;
}

// Two e4m3 codes (the low 16 bits) as two f16 values, exactly.
__device__ inline uint32_t e4m3x2_to_f16x2(uint32_t codes) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(codes & 0xFFFFu), __NV_E4M3);
  return uint32_t(h.x) | uint32_t(h.y) << 16;
}

// Where 16-byte chunk c of staged row r lies: XOR-swizzled so that both fragment reads (two
// neighbouring keys at chunks tig + 4i; four keys 4 apart at the thread's value chunk) spread a
// quarter warp over the banks.
template <int D>
__device__ inline int staged_chunk(int r, int c) {
  if constexpr (D == 64) {
    return c ^ ((r >> 2) & 3);
  } else {
    return c ^ (((r >> 2) & 3) * 2) ^ ((r & 1) * 4);
  }
}

// The value dim of byte `i` of the bytes thread group g reads from a value row: 16 a group (8 when
// D is 64), the second half of D = 256 in bytes 16..31.
template <int D>
__device__ inline int value_dim(int g, int i) {
  return (i / 16) * 128 + (D == 64 ? 8 : 16) * g + i % 16;
}

template <class E, int D, int NT>
__global__ void __launch_bounds__(kDecodeThreads) paged_decode_fp8_kernel(PagedDecodeArgs a) {
  static_assert(D == 64 || D == 128 || D == 256, "head dims the fragment mapping covers");
  using T = typename E::T;
  constexpr int kChunks = D / 16, kKSteps = D / 16, kKLoads = D / 64, kMTiles = D / 16, kHeads = NT * 8;
  constexpr int kStage = kTileKeys * D;  // bytes of K (or V) a stage
  const int64_t split = blockIdx.x, hk = blockIdx.y, b = blockIdx.z, G = a.group;
  extern __shared__ __align__(16) unsigned char shared_raw[];
  uint8_t* sK = shared_raw;  // [kFp8Stages][kTileKeys][D], chunks swizzled
  uint8_t* sV = sK + kFp8Stages * kStage;

  int64_t begin, end;
  split_keys(a, b, split, &begin, &end);
  const int32_t* table = a.table + b * a.table_row;
  const uint8_t* kh = static_cast<const uint8_t*>(a.k) + hk * a.k_head;
  const uint8_t* vh = static_cast<const uint8_t*>(a.v) + hk * a.v_head;

  // Each thread copies one chunk of K and of V for every kRowsPerPass-th key of the tile.
  constexpr int kRowsPerPass = kDecodeThreads / kChunks;
  const int my_row = threadIdx.x / kChunks, my_chunk = threadIdx.x % kChunks;
  auto load_tile = [&](int64_t j0, int s) {
    for (int r = my_row; r < kTileKeys; r += kRowsPerPass) {
      const PagedKey key = paged_key(a, table, j0 + r, end);
      const int at = s * kStage + r * D + staged_chunk<D>(r, my_chunk) * 16;
      sm80::cp_async_16(sK + at, kh + key.block * a.k_block + key.slot * a.k_slot + my_chunk * 16, key.valid);
      sm80::cp_async_16(sV + at, vh + key.block * a.v_block + key.slot * a.v_slot + my_chunk * 16, key.valid);
    }
    sm80::cp_async_commit();
  };
  for (int s = 0; s < kFp8Stages - 1; ++s) {
    if (begin + s * kTileKeys < end) {
      load_tile(begin + s * kTileKeys, s);
    } else {
      sm80::cp_async_commit();
    }
  }

  // Q^T as the B operand: k-step kk of thread tig holds dims 16 * (tig + 4 * (kk / 4)) + 4 * (kk % 4)
  // + 0..3, the bytes of the K loads below.
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, tig = lane % 4;
  constexpr float kLog2e = 1.4426950408889634f;
  const float k_scale = a.k_scale[a.k_scale_per_head ? hk : 0];
  const float v_scale = a.v_scale[a.v_scale_per_head ? hk : 0];
  uint32_t qf[kKSteps][NT][2];
  float head_scale[NT][2];  // the score scale of heads 2 * tig, 2 * tig + 1 of each tile
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    const int64_t head = nt * 8 + g;
    const T* q_row = static_cast<const T*>(a.q) + b * a.q_batch + (hk * G + (head < G ? head : 0)) * a.q_head;
    float x[kKSteps][4];
    float amax = 0.0f;
#pragma unroll
    for (int kk = 0; kk < kKSteps; ++kk) {
      const int d0 = 16 * (tig + 4 * (kk / 4)) + 4 * (kk % 4);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        x[kk][e] = head < G ? E::load(q_row[d0 + e]) : 0.0f;
        amax = fmaxf(amax, fabsf(x[kk][e]));  // a NaN is skipped: it stays NaN in f16
      }
    }
    int shift = 0;  // amax * 2^shift in [2^14, 2^15): in f16's range with its full precision
    if constexpr (E::kDType == XHAL_DTYPE_BF16) {
      amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
      amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
      if (amax > 0.0f && amax <= 3.4028235e38f) shift = min(14 - ilogbf(amax), 100);
    }
    const float up = ldexpf(1.0f, shift);
#pragma unroll
    for (int kk = 0; kk < kKSteps; ++kk) {
      qf[kk][nt][0] = sm80::pack2<F16>(x[kk][0] * up, x[kk][1] * up);
      qf[kk][nt][1] = sm80::pack2<F16>(x[kk][2] * up, x[kk][3] * up);
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int head_shift = __shfl_sync(0xffffffffu, shift, 4 * (2 * tig + h));
      head_scale[nt][h] = a.mask.scale * k_scale * ldexpf(1.0f, -head_shift);
    }
  }

  float o[NT][kMTiles][4];
  float row_max[NT][2], row_sum[NT][2];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
    for (int t = 0; t < kMTiles; ++t) o[nt][t][0] = o[nt][t][1] = o[nt][t][2] = o[nt][t][3] = 0.0f;
    row_max[nt][0] = row_max[nt][1] = -INFINITY;
    row_sum[nt][0] = row_sum[nt][1] = 0.0f;
  }
  // This warp's rows of a tile: slot g is key k_row, slot g + 8 key k_row + 2; the value fragment
  // reads keys v_row..v_row + 3 (slots 2 tig, 2 tig + 1, 2 tig + 8, 2 tig + 9).
  const int k_row = warp * 16 + 4 * (g >> 1) + (g & 1), v_row = warp * 16 + 4 * tig;

  int stage = 0;
  for (int64_t j0 = begin; j0 < end; j0 += kTileKeys) {
    sm80::cp_async_wait<kFp8Stages - 2>();
    __syncthreads();  // tile j0 is here, and every warp is done with the stage loaded next
    if (j0 + (kFp8Stages - 1) * kTileKeys < end) {
      load_tile(j0 + (kFp8Stages - 1) * kTileKeys, (stage + kFp8Stages - 1) % kFp8Stages);
    } else {
      sm80::cp_async_commit();
    }
    const uint8_t* tK = sK + stage * kStage;
    const uint8_t* tV = sV + stage * kStage;

    float s[NT][4];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
    for (int i = 0; i < kKLoads; ++i) {
      const uint4 lo = *reinterpret_cast<const uint4*>(tK + k_row * D + staged_chunk<D>(k_row, tig + 4 * i) * 16);
      const uint4 hi =
          *reinterpret_cast<const uint4*>(tK + (k_row + 2) * D + staged_chunk<D>(k_row + 2, tig + 4 * i) * 16);
      const uint32_t wl[4] = {lo.x, lo.y, lo.z, lo.w}, wh[4] = {hi.x, hi.y, hi.z, hi.w};
#pragma unroll
      for (int w = 0; w < 4; ++w) {
        const uint32_t af[4] = {e4m3x2_to_f16x2(wl[w]), e4m3x2_to_f16x2(wh[w]), e4m3x2_to_f16x2(wl[w] >> 16),
                                e4m3x2_to_f16x2(wh[w] >> 16)};
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) sm80::mma_16816<F16>(s[nt], af, qf[4 * i + w][nt][0], qf[4 * i + w][nt][1]);
      }
    }

    // Online softmax per head (columns 2 tig + h); a head's max is shared by the eight key groups.
    const int64_t j_slot = j0 + k_row;  // slot g; slot g + 8 is j_slot + 2
    uint32_t pb[NT][2];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int h = c & 1;
        const float qk = head_scale[nt][h];
        float x = a.mask.softcap > 0.0f ? a.mask.softcap * tanhf(s[nt][c] * qk / a.mask.softcap) * kLog2e
                                        : s[nt][c] * qk * kLog2e;
        if (j_slot + (c < 2 ? 0 : 2) >= end) x = -INFINITY;
        s[nt][c] = x;
        tile_max[h] = fmaxf(tile_max[h], x);
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        tile_max[h] = fmaxf(tile_max[h], __shfl_xor_sync(0xffffffffu, tile_max[h], 4));
        tile_max[h] = fmaxf(tile_max[h], __shfl_xor_sync(0xffffffffu, tile_max[h], 8));
        tile_max[h] = fmaxf(tile_max[h], __shfl_xor_sync(0xffffffffu, tile_max[h], 16));
        const float m_new = fmaxf(row_max[nt][h], tile_max[h]);
        const float base = m_new == -INFINITY ? 0.0f : m_new;
        const float correction = sm80::fast_exp2(row_max[nt][h] - base);
        row_max[nt][h] = m_new;
        row_sum[nt][h] *= correction;
#pragma unroll
        for (int t = 0; t < kMTiles; ++t) o[nt][t][h] *= correction, o[nt][t][h + 2] *= correction;
        s[nt][h] = sm80::fast_exp2(s[nt][h] - base);
        s[nt][h + 2] = sm80::fast_exp2(s[nt][h + 2] - base);
        row_sum[nt][h] += s[nt][h] + s[nt][h + 2];
      }
      pb[nt][0] = sm80::movmatrix_trans(sm80::pack2<F16>(s[nt][0], s[nt][1]));
      pb[nt][1] = sm80::movmatrix_trans(sm80::pack2<F16>(s[nt][2], s[nt][3]));
    }

    // V^T as the A operand: bytes 2t and 2t + 1 of the thread's value bytes are rows g and g + 8 of
    // m-tile t; the four rows' words are interleaved to key pairs (prmt) before the conversion.
    constexpr int kVWords = D / 32;  // a row's words a thread reads
    uint32_t vw[4][kVWords];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const uint8_t* row = tV + (v_row + r) * D;
      if constexpr (D == 64) {
        const uint2 w = *reinterpret_cast<const uint2*>(row + staged_chunk<D>(v_row + r, g >> 1) * 16 + (g & 1) * 8);
        vw[r][0] = w.x, vw[r][1] = w.y;
      } else {
#pragma unroll
        for (int c = 0; c < kVWords / 4; ++c) {
          const uint4 w = *reinterpret_cast<const uint4*>(row + staged_chunk<D>(v_row + r, g + 8 * c) * 16);
          vw[r][4 * c] = w.x, vw[r][4 * c + 1] = w.y, vw[r][4 * c + 2] = w.z, vw[r][4 * c + 3] = w.w;
        }
      }
    }
#pragma unroll
    for (int w = 0; w < kVWords; ++w) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {  // bytes 2 half, 2 half + 1 of the word: m-tile 2w + half
        const uint32_t sel = half == 0 ? 0x5140u : 0x7362u;
        const uint32_t p01 = __byte_perm(vw[0][w], vw[1][w], sel), p23 = __byte_perm(vw[2][w], vw[3][w], sel);
        const uint32_t av[4] = {e4m3x2_to_f16x2(p01), e4m3x2_to_f16x2(p01 >> 16), e4m3x2_to_f16x2(p23),
                                e4m3x2_to_f16x2(p23 >> 16)};
#pragma unroll
        for (int nt = 0; nt < NT; ++nt) sm80::mma_16816<F16>(o[nt][2 * w + half], av, pb[nt][0], pb[nt][1]);
      }
    }
    stage = (stage + 1) % kFp8Stages;
  }

  // The warps' partial results, in the rows of paged_decode_finish.
  sm80::cp_async_wait<0>();
  __syncthreads();
  float* sO = reinterpret_cast<float*>(shared_raw);  // [4][kHeads][D]
  float* sM = sO + 4 * kHeads * D;  // [4][kHeads]
  float* sL = sM + 4 * kHeads;
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float sum = row_sum[nt][h];
      sum += __shfl_xor_sync(0xffffffffu, sum, 4);
      sum += __shfl_xor_sync(0xffffffffu, sum, 8);
      sum += __shfl_xor_sync(0xffffffffu, sum, 16);
      const int head = nt * 8 + 2 * tig + h;
      if (g == 0) sM[warp * kHeads + head] = row_max[nt][h], sL[warp * kHeads + head] = sum;
#pragma unroll
      for (int t = 0; t < kMTiles; ++t) {
        sO[(warp * kHeads + head) * D + value_dim<D>(g, 2 * t)] = o[nt][t][h];
        sO[(warp * kHeads + head) * D + value_dim<D>(g, 2 * t + 1)] = o[nt][t][h + 2];
      }
    }
  }
  __syncthreads();
  paged_decode_finish<E>(a, sO, sM, sL, kHeads, D, b, hk, split, v_scale);
}

}  // namespace xhal::gpu

#endif

// attention_backward and attention_varlen_backward on tensor cores (mma.sync, sm_80+), f16/bf16,
// D == Dv in {64, 128}, FlashAttention-2 style. A block of 8 warps owns 128 keys of one (sequence,
// kv head), 16 per warp, and walks the query tiles (64 rows) of every query head of its group
// that see any of them, the next tile's Q, dO, lse and delta loading while one is computed. Per
// tile, with Q, dO, lse and delta staged in shared memory:
//   Sᵀ = K Qᵀ and dPᵀ = V dOᵀ (each warp its 16 keys, in registers), Pᵀ = exp2(Sᵀ·scale·log2e −
//   lse·log2e), dSᵀ = Pᵀ ∘ (dPᵀ − delta), masked entries exactly 0; dV += Pᵀ dO and dK += dSᵀ Q
//   straight from those registers; dSᵀ goes to shared memory, and dQ += dS K is added (scaled)
//   into an f32 accumulator in global memory with atomics (float2 on sm_90), then converted to
//   dq's dtype.
// The pre-pass, dq's accumulator and deterministic mode's order: attention_backward_tensor_cores.cuh.
#include "attention_backward_tensor_cores.cuh"

#if !defined(__HIPCC__)

#include "attention_tiles.hpp"
#include "flash_attention.cuh"

namespace xhal::gpu {
namespace {

using namespace attention_backward;

// kWarps warps of 16 keys each: a block owns kBlockN = 16 kWarps keys.
template <int D_, int BlockM_, int Warps_>
struct BackwardTile {
  static constexpr int D = D_, kBlockM = BlockM_, kWarps = Warps_, kBlockN = 16 * kWarps, kThreads = 32 * kWarps;
  static constexpr int kStride = D + 8;  // K, V, Q, dO rows in shared memory, in elements
  static constexpr int kSStride = kBlockM + 8;  // dSᵀ rows
  static constexpr int kMTiles = kBlockM / 8, kDTiles = D / 8;
  static constexpr int kQRowTiles = kBlockM / 16;  // dQ's row tiles; each has kWarps / kQRowTiles warps
  static constexpr int kDqTiles = kDTiles / (kWarps / kQRowTiles);  // dQ n-tiles of one warp
  // K, V; Q and dO in two stages; dSᵀ; lse and delta in two stages.
  static constexpr size_t kSharedBytes =
      size_t(2 * kBlockN + 4 * kBlockM) * kStride * 2 + size_t(kBlockN) * kSStride * 2 + 4 * kBlockM * 4;
  static_assert(kWarps % kQRowTiles == 0 && kDqTiles % 2 == 0 && kMTiles % 2 == 0, "tile shapes");
};

// 4 bytes global -> shared (cached in L1: neighbouring rows share lines); zero-filled when !valid.
__device__ inline void cp_async_4(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(sm80::smem_address(dst)), "l"(src),
               "r"(valid ? 4 : 0));
}

// kOrdered: deterministic mode's turns (dq_turns); else dq_turns is unused.
template <class E, class Tile, bool kOrdered>
__global__ void __launch_bounds__(Tile::kThreads)
    dkdv_mma_kernel(BackwardArgs<typename E::T> a, float* __restrict__ dq_accum, int64_t accum_batch_rows,
                    int* __restrict__ dq_turns, int64_t tiles_per_head, const int* flag) {
  using T = typename E::T;
  constexpr int D = Tile::D, kBlockM = Tile::kBlockM, kBlockN = Tile::kBlockN, kStride = Tile::kStride;
  constexpr int kSStride = Tile::kSStride, kThreads = Tile::kThreads;
  if (*flag != 0) return;
  extern __shared__ __align__(16) unsigned char shared_raw[];
  T* sK = reinterpret_cast<T*>(shared_raw);
  T* sV = sK + kBlockN * kStride;
  T* sQ = sV + kBlockN * kStride;  // [2][kBlockM][kStride]
  T* sdO = sQ + 2 * kBlockM * kStride;  // [2][kBlockM][kStride]
  T* sdS = sdO + 2 * kBlockM * kStride;
  float* sLse = reinterpret_cast<float*>(sdS + kBlockN * kSStride);  // [2][kBlockM]
  float* sDelta = sLse + 2 * kBlockM;  // [2][kBlockM]

  const AttnLayout& f = a.g.fwd;
  const KeyBlockCoords coords = key_block_coords<kOrdered>();
  const int64_t b = coords.b, hk = coords.hk, block = coords.block, n0 = block * kBlockN;
  int64_t q0, Sq, k0, Sk;
  a.span(b, &q0, &Sq, &k0, &Sk);
  if (n0 >= Sk) return;
  int64_t m_begin, m_end;
  query_span<kBlockM, kBlockN>(a.mask, n0, Sq, Sk, &m_begin, &m_end);

  const T* kb = a.k + b * f.k[0] + k0 * f.k[1] + hk * f.k[2];
  const T* vb = a.v + b * f.v[0] + k0 * f.v[1] + hk * f.v[2];
  load_tile<T, kBlockN, D, kStride, kThreads>(sK, kb, f.k[1], n0, Sk);
  load_tile<T, kBlockN, D, kStride, kThreads>(sV, vb, f.v[1], n0, Sk);
  sm80::cp_async_commit();

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, group = lane / 4, tig = lane % 4;
  // ldmatrix row addresses (mma_sm80.cuh): A from rows of [row][k] storage, B from rows of
  // [n][k] storage, B from [k][n] storage (.trans), A from [k][m] storage (.trans).
  const int a_rows = lane % 8 + (lane / 8 % 2) * 8, a_cols = (lane / 16) * 8;
  const int b_rows = lane % 8 + (lane / 16) * 8, b_cols = (lane / 8 % 2) * 8;
  const T* k_as_a = sK + (warp * 16 + a_rows) * kStride + a_cols;
  const T* v_as_a = sV + (warp * 16 + a_rows) * kStride + a_cols;
  const T* q_as_b = sQ + b_rows * kStride + b_cols;
  const T* do_as_b = sdO + b_rows * kStride + b_cols;
  const T* q_as_bt = sQ + a_rows * kStride + a_cols;  // the .trans B layout uses the A addressing
  const T* do_as_bt = sdO + a_rows * kStride + a_cols;
  const T* k_as_bt = sK + a_rows * kStride + a_cols;
  const T* ds_as_at = sdS + b_rows * kSStride + b_cols;

  float dk[Tile::kDTiles][4] = {}, dv[Tile::kDTiles][4] = {};
  const float scale_log2 = a.mask.scale * kLog2e;
  const int dq_row_tile = warp % Tile::kQRowTiles, dq_first_tile = warp / Tile::kQRowTiles * Tile::kDqTiles;

  // The (query head, query tile) steps, the next one's Q, dO, lse and delta loading (cp.async and
  // plain loads into the other stage) while this one is computed.
  const int64_t m_tiles = m_end > m_begin ? (m_end - m_begin + kBlockM - 1) / kBlockM : 0;
  const int64_t steps = m_tiles * f.group;
  const auto load_step = [&](int64_t step, int stage) {
    const int64_t h = hk * f.group + step / m_tiles, m0 = m_begin + step % m_tiles * kBlockM;
    load_tile<T, kBlockM, D, kStride, kThreads>(sQ + stage * kBlockM * kStride,
                                                a.q + b * f.q[0] + q0 * f.q[1] + h * f.q[2], f.q[1], m0, Sq);
    load_tile<T, kBlockM, D, kStride, kThreads>(sdO + stage * kBlockM * kStride,
                                                a.dout + b * a.g.dout[0] + q0 * a.g.dout[1] + h * a.g.dout[2],
                                                a.g.dout[1], m0, Sq);
    // lse (natural log; scaled where it is used) and delta by cp.async too, in the same group: no
    // thread waits on a global load at the top of a step. Rows past Sq get zeros.
    if (threadIdx.x < kBlockM) {
      const int64_t i = m0 + threadIdx.x;
      const bool valid = i < Sq;
      const int64_t row = valid ? i : 0;
      cp_async_4(sLse + stage * kBlockM + threadIdx.x, a.lse + b * f.lse[0] + h * f.lse[1] + (q0 + row) * f.lse[2],
                 valid);
      cp_async_4(sDelta + stage * kBlockM + threadIdx.x, a.delta + (b * f.Hq + h) * a.max_rows + row, valid);
    }
    sm80::cp_async_commit();
  };
  if (steps > 0) load_step(0, 0);
  for (int64_t step = 0; step < steps; ++step) {
    const int stage = int(step & 1);
    const int64_t h = hk * f.group + step / m_tiles, m0 = m_begin + step % m_tiles * kBlockM;
    if (step + 1 < steps) {  // the other stage was last read before the previous step's second barrier
      load_step(step + 1, stage ^ 1);
      sm80::cp_async_wait<1>();
    } else {
      sm80::cp_async_wait<0>();
    }
    __syncthreads();  // this stage's tiles are in; the previous step's dQ no longer reads dSᵀ
    const int stage_offset = stage * kBlockM * kStride;
    const float* lse_s = sLse + stage * kBlockM;
    const float* delta_s = sDelta + stage * kBlockM;
    // Whether every (key, query) pair of this warp's 16 keys and the tile's queries is visible.
    const int64_t j_first = n0 + warp * 16, j_last = j_first + 15, i_last = m0 + kBlockM - 1;
    const bool all_visible = sees(a.mask, m0, j_first, Sq, Sk) && sees(a.mask, m0, j_last, Sq, Sk) &&
                             sees(a.mask, i_last, j_first, Sq, Sk) && sees(a.mask, i_last, j_last, Sq, Sk);
    float st[Tile::kMTiles][4] = {}, dpt[Tile::kMTiles][4] = {};
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      uint32_t ak[4], av[4];
      sm80::ldmatrix_x4(ak, k_as_a + kk * 16);
      sm80::ldmatrix_x4(av, v_as_a + kk * 16);
#pragma unroll
      for (int p = 0; p < Tile::kMTiles / 2; ++p) {
        uint32_t bq[4], bd[4];
        sm80::ldmatrix_x4(bq, q_as_b + stage_offset + p * 16 * kStride + kk * 16);
        sm80::ldmatrix_x4(bd, do_as_b + stage_offset + p * 16 * kStride + kk * 16);
        sm80::mma_16816<E>(st[2 * p], ak, bq[0], bq[1]);
        sm80::mma_16816<E>(st[2 * p + 1], ak, bq[2], bq[3]);
        sm80::mma_16816<E>(dpt[2 * p], av, bd[0], bd[1]);
        sm80::mma_16816<E>(dpt[2 * p + 1], av, bd[2], bd[3]);
      }
    }
    // Pᵀ and dSᵀ, element (key warp*16 + group + 8 (c / 2), query 8t + 2 tig + c % 2).
    auto gradients = [&](auto masked, const BandMask& band) {
#pragma unroll
      for (int t = 0; t < Tile::kMTiles; ++t) {
        // The two queries of this thread's columns: their lse and delta as one 8-byte load each.
        const float2 lse2 = *reinterpret_cast<const float2*>(lse_s + t * 8 + tig * 2);
        const float2 delta2 = *reinterpret_cast<const float2*>(delta_s + t * 8 + tig * 2);
        score_gradients<decltype(masked)::value>(st[t], dpt[t], make_float2(lse2.x * kLog2e, lse2.y * kLog2e), delta2,
                                                 scale_log2, band, t, tig);
        // dSᵀ to shared memory for dQ (the rows of this warp's keys).
        T* row = sdS + (warp * 16 + group) * kSStride + t * 8 + tig * 2;
        *reinterpret_cast<uint32_t*>(row) = sm80::pack2<E>(dpt[t][0], dpt[t][1]);
        *reinterpret_cast<uint32_t*>(row + 8 * kSStride) = sm80::pack2<E>(dpt[t][2], dpt[t][3]);
      }
    };
    if (all_visible) {  // one branch a tile: the tiles no mask cuts through test no pair
      gradients(std::false_type{}, BandMask{});
    } else {
      gradients(std::true_type{}, BandMask(a.mask, m0, j_first + group, Sq, Sk, kBlockM));
    }
    // dV += Pᵀ dO, dK += dSᵀ Q: the queries are the k dimension.
#pragma unroll
    for (int kk = 0; kk < kBlockM / 16; ++kk) {
      uint32_t pa[4], da[4];
      probabilities_as_a<E>(st, kk, pa);
      probabilities_as_a<E>(dpt, kk, da);
#pragma unroll
      for (int p = 0; p < Tile::kDTiles / 2; ++p) {
        uint32_t bd[4], bq[4];
        sm80::ldmatrix_x4_trans(bd, do_as_bt + stage_offset + kk * 16 * kStride + p * 16);
        sm80::ldmatrix_x4_trans(bq, q_as_bt + stage_offset + kk * 16 * kStride + p * 16);
        sm80::mma_16816<E>(dv[2 * p], pa, bd[0], bd[1]);
        sm80::mma_16816<E>(dv[2 * p + 1], pa, bd[2], bd[3]);
        sm80::mma_16816<E>(dk[2 * p], da, bq[0], bq[1]);
        sm80::mma_16816<E>(dk[2 * p + 1], da, bq[2], bq[3]);
      }
    }
    __syncthreads();  // dSᵀ complete
    // dQ (this warp: row tile dq_row_tile, n-tiles from dq_first_tile) += dS K, the keys the k
    // dimension; added, scaled, into the f32 accumulator.
    float dq[Tile::kDqTiles][4] = {};
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) {
      uint32_t ad[4];
      sm80::ldmatrix_x4_trans(ad, ds_as_at + kk * 16 * kSStride + dq_row_tile * 16);
#pragma unroll
      for (int p = 0; p < Tile::kDqTiles / 2; ++p) {
        uint32_t bk[4];
        sm80::ldmatrix_x4_trans(bk, k_as_bt + kk * 16 * kStride + (dq_first_tile + 2 * p) * 8);
        sm80::mma_16816<E>(dq[2 * p], ad, bk[0], bk[1]);
        sm80::mma_16816<E>(dq[2 * p + 1], ad, bk[2], bk[3]);
      }
    }
    int* turn = nullptr;
    if constexpr (kOrdered) {
      turn = wait_dq_turn<kBlockM, kBlockN, 0, Tile::kThreads>(dq_turns, tiles_per_head, a.mask, b, f.Hq, h, m0, block,
                                                               Sq, Sk, threadIdx.x == 0);
    }
    add_dq_rows<D>(dq_accum, dq, b * accum_batch_rows + q0, m0 + dq_row_tile * 16, Sq, f.Hq, h, dq_first_tile * 8,
                   a.mask.scale, group, tig);
    if constexpr (kOrdered) pass_turn<0, Tile::kThreads>(turn, threadIdx.x == 0);
  }
  sm80::cp_async_wait<0>();  // a block whose keys no query sees still has K and V in flight
  store_key_gradients<E>(a, dk, dv, b, hk, k0, n0 + warp * 16, Sk, group, tig);
}

template <class E, class Tile>
xhal_status launch_mma_backward(const xhal_op_call* c, char* msg, size_t len) {
  return launch_tensor_core_backward<E, Tile::kBlockM>(
      c, msg, len,
      [&](const BackwardArgs<typename E::T>& a, float* dq_accum, int64_t accum_batch_rows, int* turns,
          int64_t tiles_per_head, const int* flag, gpuStream_t stream) {
        static const bool shared_raised = [] {
          allow_shared_bytes(dkdv_mma_kernel<E, Tile, false>, Tile::kSharedBytes);
          allow_shared_bytes(dkdv_mma_kernel<E, Tile, true>, Tile::kSharedBytes);
          return true;
        }();
        (void)shared_raised;
        const auto kernel = turns != nullptr ? dkdv_mma_kernel<E, Tile, true> : dkdv_mma_kernel<E, Tile, false>;
        kernel<<<key_block_grid(a, Tile::kBlockN), Tile::kThreads, Tile::kSharedBytes, stream>>>(
            a, dq_accum, accum_batch_rows, turns, tiles_per_head, flag);
        return XHAL_OK;
      });
}

// The tile for head dim D: its row of attention_tiles.hpp.
template <int D>
using MmaBackwardTile = BackwardTile<D, attention_tiles::find(attention_tiles::kMmaBackward, D).block_m,
                                     attention_tiles::find(attention_tiles::kMmaBackward, D).extra>;
static_assert(MmaBackwardTile<128>::kBlockN == attention_tiles::find(attention_tiles::kMmaBackward, 128).block_n,
              "the table's keys a block are the tile's");

// Tiles by head dim (tensor_core_supports admits 64 and 128).
template <class E>
struct MmaAttentionBackward {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    const DLTensor* q = c->tensors[XHAL_ATTENTION_BACKWARD_Q];
    return q->shape[q->ndim - 1] == 64 ? launch_mma_backward<E, MmaBackwardTile<64>>(c, msg, len)
                                       : launch_mma_backward<E, MmaBackwardTile<128>>(c, msg, len);
  }
};

const char* mma_backward_supports(void*, const xhal_op_call* c) { return tensor_core_supports(c); }

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  const kernels::KernelTraits mma{10, false, mma_backward_supports};
  register_half_kernels<MmaAttentionBackward>(host, "cuda.attention_backward_mma", XHAL_OP_ATTENTION_BACKWARD, mma);
  register_half_kernels<MmaAttentionBackward>(host, "cuda.attention_varlen_backward_mma",
                                              XHAL_OP_ATTENTION_VARLEN_BACKWARD, mma);
}

}  // namespace xhal::gpu

#endif

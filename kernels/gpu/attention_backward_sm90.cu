// attention_backward on Hopper (sm_90a) for f16/bf16, D == Dv in {64, 128}, dense batches:
// warp-specialised, TMA loads, warpgroup MMA (wgmma). A block owns 128 keys of one (sequence, kv
// head) and walks the query tiles (64 rows at D = 128, 128 at D = 64) of every query head of its
// group that see any of them.
// Its producer warp loads K and V once and each tile's Q and dO into two stages with TMA
// (128-byte swizzled, as wgmma reads them), lse and delta with plain loads, each stage completing
// on an mbarrier. Two consumer warpgroups own 64 keys each; per tile:
//   Sᵀ = K Qᵀ and dPᵀ = V dOᵀ (wgmma, both operands in shared memory), Pᵀ and dSᵀ on the
//   accumulators (masked entries exactly 0), dV += Pᵀ dO and dK += dSᵀ Q with Pᵀ and dSᵀ straight
//   from registers, dSᵀ to shared memory, then dQ = dS K read transposed from there, added into
//   the f32 accumulator with atomics.
// dQ over all 128 keys once both dSᵀ halves are written (the consumers meet at a barrier): at
// D = 128 each consumer computes 64 of its columns, at D = 64 64 of its rows. The 128-row tiles at
// D = 64 halve a block's steps (and their barriers) and keep each wgmma at 64 rows: 1.13-1.16x
// faster than 64-row tiles on an H200.
// The pre-pass, dq's conversion and deterministic mode's order between blocks:
// attention_backward_tensor_cores.cuh. Varlen calls take the mma.sync kernel: a tile's TMA rows
// past its sequence would be the next sequence's, not zeros.
#include "attention_backward_tensor_cores.cuh"

#if !defined(__HIPCC__)

#include "attention_tiles.hpp"
#include "flash_rows.cuh"
#include "tma_map.cuh"
#include "tma_sm90.cuh"
#include "wgmma_sm90.cuh"

namespace xhal::gpu {
namespace {

using namespace attention_backward;

template <int D_, int kBlockM_>
struct WgmmaBackwardTile {
  static constexpr int D = D_, kBlockM = kBlockM_, kBlockN = 128, kThreads = 384;
  static constexpr int kMTiles = kBlockM / 8, kDTiles = D / 8;
  // dQ over all 128 keys, each consumer its 64 columns (D = 128) or its 64 rows (D = 64, whose
  // tiles have 128 query rows so that each consumer's wgmma keeps 64 rows).
  static constexpr int kKVBytes = kBlockN * D * 2, kRowsBytes = kBlockM * D * 2, kDsBytes = kBlockN * kBlockM * 2;
  // K, V; Q, dO and dSᵀ in two stages; lse and delta in two stages; the mbarriers; 1 KiB of slack
  // to align the tiles for the swizzle.
  static constexpr size_t kQOffset = 2 * size_t(kKVBytes), kDoOffset = kQOffset + 2 * size_t(kRowsBytes);
  static constexpr size_t kDsOffset = kDoOffset + 2 * size_t(kRowsBytes), kLseOffset = kDsOffset + 2 * size_t(kDsBytes);
  static constexpr size_t kBarrierOffset = kLseOffset + 4 * kBlockM * sizeof(float);
  static constexpr size_t kSharedBytes = kBarrierOffset + 8 * sizeof(uint64_t) + 1024;
  static_assert(D == 64 || D == 128, "one or two 64-column blocks");
  static_assert(kBlockM * D == 8192, "Sᵀ's registers: 64 x 128 or 128 x 64 a consumer");
};

// TMA maps of q, k, v and dout, [batch][rows][heads][D], 128-byte swizzled boxes of 64 columns.
struct BackwardMaps {
  CUtensorMap q, k, v, dout;
};

// Sᵀ or dPᵀ of one consumer (its 64 keys against the tile's kBlockM queries): A = its rows of K
// (or V), B = the tile's Q (or dO), both K-major, summed over D.
template <class E, class Tile>
__device__ inline void keys_times_rows(float (&acc)[Tile::kMTiles][4], const unsigned char* keys,
                                       const unsigned char* rows) {
#pragma unroll
  for (int kk = 0; kk < Tile::D / 16; ++kk) {
    const int block = kk / 4, within = (kk % 4) * 32;
    sm90::mma_ss<E, Tile::kBlockM>(acc, sm90::descriptor(keys + block * Tile::kBlockN * 128 + within, 16, 1024),
                                   sm90::descriptor(rows + block * Tile::kBlockM * 128 + within, 16, 1024), kk > 0);
  }
}

// acc (64 keys x D) += Aᵀ B: A = Pᵀ or dSᵀ in registers (kk: 16 queries each), B = the tile's dO
// or Q read MN-major (queries along K).
template <class E, class Tile>
__device__ inline void add_keys_by_rows(float (&acc)[Tile::kDTiles][4], const uint32_t (&a)[Tile::kBlockM / 16][4],
                                        const unsigned char* rows) {
  constexpr uint32_t kBlockBytes = Tile::kBlockM * 128;  // a 64-column block of the tile: the step to the next
#pragma unroll
  for (int kk = 0; kk < Tile::kBlockM / 16; ++kk) {
    sm90::mma_rs<E, Tile::D>(acc, a[kk], sm90::descriptor(rows + kk * 16 * 128, kBlockBytes, 1024));
  }
}

// kOrdered: deterministic mode's turns (dq_turns); else dq_turns is unused.
template <class E, class Tile, bool kOrdered>
__global__ void __launch_bounds__(Tile::kThreads, 1)
    dkdv_wgmma_kernel(const __grid_constant__ BackwardMaps maps, BackwardArgs<typename E::T> a,
                      float* __restrict__ dq_accum, int64_t accum_batch_rows, int* __restrict__ dq_turns,
                      int64_t tiles_per_head, const int* flag) {
#if XHAL_WGMMA_DEVICE
  using T = typename E::T;
  constexpr int D = Tile::D, kBlockM = Tile::kBlockM, kBlockN = Tile::kBlockN;
  if (*flag != 0) return;
  const AttnLayout& f = a.g.fwd;
  const KeyBlockCoords coords = key_block_coords<kOrdered>();
  const int64_t b = coords.b, hk = coords.hk, block = coords.block, n0 = block * kBlockN;
  int64_t q0, Sq, k0, Sk;
  a.span(b, &q0, &Sq, &k0, &Sk);
  if (n0 >= Sk) return;
  int64_t m_begin, m_end;
  query_span<kBlockM, kBlockN>(a.mask, n0, Sq, Sk, &m_begin, &m_end);
  const int64_t m_tiles = m_end > m_begin ? (m_end - m_begin + kBlockM - 1) / kBlockM : 0;
  const int64_t steps = m_tiles * f.group;

  extern __shared__ unsigned char shared_raw[];
  unsigned char* sK = shared_raw + (1024 - sm80::smem_address(shared_raw) % 1024) % 1024;
  unsigned char* sV = sK + Tile::kKVBytes;
  unsigned char* sQ = sK + Tile::kQOffset;  // [2 stages]
  unsigned char* sdO = sK + Tile::kDoOffset;  // [2 stages]
  unsigned char* sdS = sK + Tile::kDsOffset;  // [2 stages] of dSᵀ: 128 key rows of 64 queries
  float* sLse = reinterpret_cast<float*>(sK + Tile::kLseOffset);  // [2][kBlockM]
  float* sDelta = sLse + 2 * kBlockM;  // [2][kBlockM]
  uint64_t* bars = reinterpret_cast<uint64_t*>(sK + Tile::kBarrierOffset);
  uint64_t* kv_full = bars;  // K and V landed
  uint64_t* full = bars + 1;  // [2]: the stage's Q, dO, lse and delta landed
  uint64_t* empty = bars + 3;  // [2]: both consumers are done with the stage
  if (threadIdx.x == 0) {
    sm90::mbarrier_init(kv_full, 1);
    for (int st = 0; st < 2; ++st) {
      sm90::mbarrier_init(full + st, kWarpSize);
      sm90::mbarrier_init(empty + st, 2);
    }
    sm90::mbarrier_init_fence();
  }
  __syncthreads();

  const int wg = threadIdx.x / 128, warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;
  if (wg == 0) {  // producer: its first warp
    sm90::registers_decrease<24>();
    if (warp != 0 || steps == 0) return;
    if (lane == 0) {
      sm90::mbarrier_arrive_expect(kv_full, 2 * Tile::kKVBytes);
      for (int cb = 0; cb < D / 64; ++cb) {
        sm90::tma_load_4d(sK + cb * kBlockN * 128, &maps.k, cb * 64, int(hk), int(n0), int(b), kv_full);
        sm90::tma_load_4d(sV + cb * kBlockN * 128, &maps.v, cb * 64, int(hk), int(n0), int(b), kv_full);
      }
    }
    // The steps walk the query tiles of each query head of the group in turn (counters: a 64-bit
    // division per step showed in the profile).
    int h = int(hk * f.group), m0 = int(m_begin);
    for (int64_t step = 0; step < steps; ++step, m0 += kBlockM) {
      if (m0 >= m_end) m0 = int(m_begin), ++h;
      const int st = int(step & 1);
      if (step >= 2) sm90::mbarrier_wait(empty + st, unsigned((step >> 1) - 1) & 1u);
      if (lane == 0) {
        sm90::mbarrier_expect_tx(full + st, 2 * Tile::kRowsBytes);
        for (int cb = 0; cb < D / 64; ++cb) {
          sm90::tma_load_4d(sQ + st * Tile::kRowsBytes + cb * kBlockM * 128, &maps.q, cb * 64, int(h), int(m0), int(b),
                            full + st);
          sm90::tma_load_4d(sdO + st * Tile::kRowsBytes + cb * kBlockM * 128, &maps.dout, cb * 64, int(h), int(m0),
                            int(b), full + st);
        }
      }
      // lse (scaled by log2 e for exp2) and delta; rows past Sq get zeros (masked).
      for (int r = lane; r < kBlockM; r += kWarpSize) {
        const int64_t i = m0 + r;
        const bool valid = i < Sq;
        sLse[st * kBlockM + r] = valid ? a.lse[b * f.lse[0] + h * f.lse[1] + (q0 + i) * f.lse[2]] * kLog2e : 0.0f;
        sDelta[st * kBlockM + r] = valid ? a.delta[(b * f.Hq + h) * a.max_rows + i] : 0.0f;
      }
      sm90::mbarrier_arrive(full + st);
    }
    return;
  }

  sm90::registers_increase<240>();
  const int cw = wg - 1;  // consumer 0 or 1: keys [64 cw, 64 cw + 64) of the block
  const int group = lane / 4, tig = lane % 4;
  const bool leader = threadIdx.x == 128;
  const unsigned char* k_rows = sK + cw * 64 * 128;
  const unsigned char* v_rows = sV + cw * 64 * 128;
  float dk[Tile::kDTiles][4], dv[Tile::kDTiles][4];
#pragma unroll
  for (int t = 0; t < Tile::kDTiles; ++t) {
#pragma unroll
    for (int c = 0; c < 4; ++c) dk[t][c] = dv[t][c] = 0.0f;
  }
  const float scale_log2 = a.mask.scale * kLog2e;
  // This warp's 16 keys: accumulator rows group and group + 8 (c / 2) of them.
  const int64_t j_first = n0 + cw * 64 + warp * 16;
  if (steps > 0) sm90::mbarrier_wait(kv_full, 0);
  int h = int(hk * f.group), m0 = int(m_begin);  // as the producer walks them
  for (int64_t step = 0; step < steps; ++step, m0 += kBlockM) {
    if (m0 >= m_end) m0 = int(m_begin), ++h;
    const int st = int(step & 1);
    sm90::mbarrier_wait(full + st, unsigned(step >> 1) & 1u);
    const unsigned char* q_tile = sQ + st * Tile::kRowsBytes;
    const unsigned char* do_tile = sdO + st * Tile::kRowsBytes;
    unsigned char* ds_tile = sdS + st * Tile::kDsBytes;
    const float* lse_s = sLse + st * kBlockM;
    const float* delta_s = sDelta + st * kBlockM;

    float s_t[Tile::kMTiles][4], dp_t[Tile::kMTiles][4];
    sm90::fence();
    keys_times_rows<E, Tile>(s_t, k_rows, q_tile);
    keys_times_rows<E, Tile>(dp_t, v_rows, do_tile);
    sm90::commit();
    sm90::wait<0>();
    sm90::pin(s_t);
    sm90::pin(dp_t);

    // Pᵀ and dSᵀ, element (key j_first + group + 8 (c / 2), query 8t + 2 tig + c % 2); dSᵀ also
    // to shared memory, swizzled as the tile's rows of 128 bytes (16-byte chunk t of row r at
    // t ^ (r % 8), and r % 8 = group).
    const int64_t j_last = j_first + 15, i_last = m0 + kBlockM - 1;
    const bool all_visible = sees(a.mask, m0, j_first, Sq, Sk) && sees(a.mask, m0, j_last, Sq, Sk) &&
                             sees(a.mask, i_last, j_first, Sq, Sk) && sees(a.mask, i_last, j_last, Sq, Sk);
    unsigned char* ds_row = ds_tile + (cw * 64 + warp * 16 + group) * 128 + tig * 4;
    auto gradients = [&](auto masked, const BandMask& band) {
#pragma unroll
      for (int t = 0; t < Tile::kMTiles; ++t) {
        const float2 lse2 = *reinterpret_cast<const float2*>(lse_s + t * 8 + tig * 2);
        const float2 delta2 = *reinterpret_cast<const float2*>(delta_s + t * 8 + tig * 2);
        score_gradients<decltype(masked)::value>(s_t[t], dp_t[t], lse2, delta2, scale_log2, band, t, tig);
        // Queries past 64 go to the next 64-column block of dSᵀ (128 key rows of 128 bytes).
        const int chunk = (t / 8) * kBlockN * 128 + ((t % 8) ^ group) * 16;
        *reinterpret_cast<uint32_t*>(ds_row + chunk) = sm80::pack2<E>(dp_t[t][0], dp_t[t][1]);
        *reinterpret_cast<uint32_t*>(ds_row + 8 * 128 + chunk) = sm80::pack2<E>(dp_t[t][2], dp_t[t][3]);
      }
    };
    if (all_visible) {  // one branch a tile: the tiles no mask cuts through test no pair
      gradients(std::false_type{}, BandMask{});
    } else {
      gradients(std::true_type{}, BandMask(a.mask, m0, j_first + group, Sq, Sk, kBlockM));
    }
    uint32_t pa[kBlockM / 16][4], da[kBlockM / 16][4];
#pragma unroll
    for (int kk = 0; kk < kBlockM / 16; ++kk) {
      probabilities_as_a<E>(s_t, kk, pa[kk]);
      probabilities_as_a<E>(dp_t, kk, da[kk]);
    }
    // dV += Pᵀ dO, dK += dSᵀ Q.
    sm90::pin(dv);
    sm90::pin(dk);
    sm90::fence();
    add_keys_by_rows<E, Tile>(dv, pa, do_tile);
    add_keys_by_rows<E, Tile>(dk, da, q_tile);
    sm90::commit();

    // dQ = dS K, A = dSᵀ and B = K both read MN-major (keys along K), once the dSᵀ rows it needs
    // are written and visible to the tensor cores.
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    sync_barrier<1, 256>();
    float dq[8][4];
    sm90::fence();
    // All 128 keys; this consumer's 64 columns (D = 128) or 64 rows (kBlockM = 128).
    const int rows = kBlockM == 128 ? cw : 0, columns = D == 128 ? cw : 0;
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) {
      sm90::mma_ss<E, 64, 0, 1, 1>(dq, sm90::descriptor(ds_tile + rows * kBlockN * 128 + kk * 16 * 128, 64 * 128, 1024),
                                   sm90::descriptor(sK + columns * kBlockN * 128 + kk * 16 * 128, kBlockN * 128, 1024),
                                   kk > 0);
    }
    sm90::commit();
    sm90::wait<0>();
    sm90::pin(dq);
    sm90::pin(dv);
    sm90::pin(dk);
    if (threadIdx.x % 128 == 0) sm90::mbarrier_arrive(empty + st);  // Q, dO, lse, delta read

    // dQ rows m0 + 16 warp + group + 8 hh (+ 64 cw when split by rows), columns 8t + 2 tig (+ 64 cw
    // when split by columns).
    int* turn = nullptr;
    if constexpr (kOrdered) {
      turn = wait_dq_turn<kBlockM, kBlockN, 1, 256>(dq_turns, tiles_per_head, a.mask, b, f.Hq, h, m0, block, Sq, Sk,
                                                    leader);
    }
    add_dq_rows<D>(dq_accum, dq, b * accum_batch_rows + q0, m0 + (kBlockM == 128 ? cw * 64 : 0) + warp * 16, Sq, f.Hq,
                   h, D == 128 ? cw * 64 : 0, a.mask.scale, group, tig);
    if constexpr (kOrdered) {
      pass_turn<1, 256>(turn, leader);
    }
  }
  store_key_gradients<E>(a, dk, dv, b, hk, k0, j_first, Sk, group, tig);
#endif
}

template <class E, class Tile>
xhal_status launch_wgmma_backward(const xhal_op_call* c, char* msg, size_t len) {
  return launch_tensor_core_backward<E, Tile::kBlockM>(
      c, msg, len,
      [&](const BackwardArgs<typename E::T>& a, float* dq_accum, int64_t accum_batch_rows, int* turns,
          int64_t tiles_per_head, const int* flag, gpuStream_t stream) {
        static const bool shared_raised = [] {
          allow_shared_bytes(dkdv_wgmma_kernel<E, Tile, false>, Tile::kSharedBytes);
          allow_shared_bytes(dkdv_wgmma_kernel<E, Tile, true>, Tile::kSharedBytes);
          return true;
        }();
        (void)shared_raised;
        const bool bf16 = E::kDType == XHAL_DTYPE_BF16;
        BackwardMaps maps;
        if (!encode_rows_map(&maps.q, c->tensors[XHAL_ATTENTION_BACKWARD_Q], true, Tile::kBlockM, bf16) ||
            !encode_rows_map(&maps.dout, c->tensors[XHAL_ATTENTION_BACKWARD_DOUT], true, Tile::kBlockM, bf16) ||
            !encode_rows_map(&maps.k, c->tensors[XHAL_ATTENTION_BACKWARD_K], true, Tile::kBlockN, bf16) ||
            !encode_rows_map(&maps.v, c->tensors[XHAL_ATTENTION_BACKWARD_V], true, Tile::kBlockN, bf16)) {
          return kernel_error(msg, len, XHAL_ERR_DEVICE,
                              "attention_backward: the driver refused a TMA map of q, k, v or dout");
        }
        const auto kernel = turns != nullptr ? dkdv_wgmma_kernel<E, Tile, true> : dkdv_wgmma_kernel<E, Tile, false>;
        kernel<<<key_block_grid(a, Tile::kBlockN), Tile::kThreads, Tile::kSharedBytes, stream>>>(
            maps, a, dq_accum, accum_batch_rows, turns, tiles_per_head, flag);
        return XHAL_OK;
      });
}

// The tile for head dim D: its row of attention_tiles.hpp.
template <int D>
using WgmmaBackwardTileOf = WgmmaBackwardTile<D, attention_tiles::find(attention_tiles::kWgmmaBackward, D).block_m>;
static_assert(WgmmaBackwardTileOf<64>::kBlockN == attention_tiles::find(attention_tiles::kWgmmaBackward, 64).block_n,
              "the table's keys a block are the tile's");

template <class E>
struct WgmmaAttentionBackward {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    const DLTensor* q = c->tensors[XHAL_ATTENTION_BACKWARD_Q];
    if (q->shape[q->ndim - 1] == 128) return launch_wgmma_backward<E, WgmmaBackwardTileOf<128>>(c, msg, len);
    return launch_wgmma_backward<E, WgmmaBackwardTileOf<64>>(c, msg, len);
  }
};

// The mma.sync kernel's conditions, TMA maps of q, k, v and dout, an sm_90 device.
const char* wgmma_backward_supports(void*, const xhal_op_call* c) {
  if (const char* why = tensor_core_supports(c)) return why;
  if (const char* why =
          rows_map_unsupported({c->tensors[XHAL_ATTENTION_BACKWARD_Q], c->tensors[XHAL_ATTENTION_BACKWARD_K],
                                c->tensors[XHAL_ATTENTION_BACKWARD_V], c->tensors[XHAL_ATTENTION_BACKWARD_DOUT]})) {
    return why;
  }
  const DLTensor* q = c->tensors[XHAL_ATTENTION_BACKWARD_Q];
  if (q->shape[0] > 65535 || q->shape[1] >= (int64_t(1) << 31)) return "more than 65535 sequences or 2^31 rows";
  if (!is_sm90(c->device)) return "device is not sm_90 (wgmma)";
  return nullptr;
}

}  // namespace

XHAL_REGISTER_KERNELS(host) {
#if defined(XHAL_CUDA_SM90A)
  const kernels::KernelTraits wgmma{20, false, wgmma_backward_supports};
  register_half_kernels<WgmmaAttentionBackward>(host, "cuda.attention_backward_wgmma", XHAL_OP_ATTENTION_BACKWARD,
                                                wgmma);
#else
  (void)host;  // built without sm_90a code: the mma.sync kernel serves Hopper too
#endif
}

}  // namespace xhal::gpu

#endif

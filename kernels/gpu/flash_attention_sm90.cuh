// Flash attention on Hopper (sm_90a) for f16/bf16, D = 64, 128 or 256: warp-specialised, TMA loads,
// warpgroup MMA (wgmma). A block owns 128 query rows of one (sequence, head). Its producer
// warpgroup (one thread, few registers) loads Q once and K/V tiles of kBlockN keys into two
// stages with TMA, 128-byte swizzled as wgmma reads them, each load completing on an mbarrier.
// Two consumer warpgroups (64 rows each, the registers the producer gave up) compute S = Q Kᵀ with
// both operands in shared memory, run the online softmax on the accumulators (flash_rows.cuh,
// shared with the mma.sync kernel) and O += P V with P straight from registers and V read
// transposed. They take turns at the tensor cores: a turn issues P V of one tile with the scores
// of the next, and one consumer's softmax runs while the other's turn does. K and V free their
// stage apart (K once its scores are in, V once its product is), so each load has a turn's time
// to land.
#pragma once

#if !defined(__HIPCC__)

#include <type_traits>

#include "flash_rows.cuh"
#include "tma_sm90.cuh"
#include "wgmma_sm90.cuh"

namespace xhal::gpu {

template <int D_, int BlockN_>
struct WgmmaFlashTile {
  static constexpr int D = D_, kBlockN = BlockN_;
  static constexpr int kThreads = 384, kBlockM = 128;
  static constexpr int kSTiles = kBlockN / 8, kOTiles = D / 8, kKSteps = D / 16, kPSteps = kBlockN / 16;
  static constexpr int kQBytes = kBlockM * D * 2, kKVBytes = kBlockN * D * 2;
  // Q, K and V for two stages, the mbarriers, and 1 KiB of slack to align the tiles for the swizzle.
  static constexpr size_t kBarrierOffset = size_t(kQBytes) + 4 * size_t(kKVBytes);
  static constexpr size_t kSharedBytes = kBarrierOffset + 10 * sizeof(uint64_t) + 1024;
  static_assert(D == 64 || D == 128 || D == 256, "one, two or four 64-column blocks");
  static_assert(kBlockN == 64 || kBlockN == 128, "wgmma N of the score tile");
  static_assert(kSharedBytes <= size_t(kMaxDynamicSharedBytes), "the tile's shared memory");
};

// TMA maps of q, k and v viewed as [batch][rows][heads][D] (varlen: one batch of all tokens),
// boxes of 64 columns by the tile's rows, 128-byte swizzled.
// The TMA maps of q, k and v; for paged_prefill k and v map the caches [num_blocks, block_size,
// Hkv, D] (rows: slots, batch: blocks) and pages holds the block table.
struct AttnMaps {
  CUtensorMap q, k, v;
  KeyPages pages;
};

// The producer of paged_prefill's kernel, run by one warp: Q as the varlen kernel loads it, then
// each K/V tile as kBlockN / box loads of `box` keys (a page, or the tile within one page) at
// (slot, block). Lane p fetches the block of the tile's page p a tile ahead and issues that page's
// loads (one instruction issues the tile's loads together). Pages past the sequence's get block -1, which TMA fills with
// zeros, as it does a block outside the cache.
template <class Tile, class T>
__device__ void produce_paged(const AttnMaps& maps, const FlashBlock<T>& blk, int64_t tiles, unsigned char* sQ,
                              unsigned char* sK, unsigned char* sV, uint64_t* q_full, uint64_t* k_full,
                              uint64_t* v_full, uint64_t* k_empty, uint64_t* v_empty) {
  constexpr int D = Tile::D, kBlockN = Tile::kBlockN;
  const int lane = threadIdx.x % 32;
  const KeyPages& pages = maps.pages;
  const int box = pages.block_size >= kBlockN ? kBlockN : pages.block_size, per_tile = kBlockN / box;
  const int64_t seq_pages = (blk.Sk + pages.block_size - 1) / pages.block_size;
  auto fetch = [&](int64_t t) {  // this lane's page of tile t, -1 past the sequence's pages
    const int64_t page = (blk.kv_begin + t * kBlockN) / pages.block_size + lane;
    return t < tiles && lane < per_tile && page < seq_pages ? int(pages.table[blk.b * pages.table_row + page]) : -1;
  };
  if (lane == 0) {
    sm90::mbarrier_arrive_expect(q_full, Tile::kQBytes);
    for (int cb = 0; cb < D / 64; ++cb) {
      sm90::tma_load_4d(sQ + cb * Tile::kBlockM * 128, &maps.q, cb * 64, int(blk.head), int(blk.q0 + blk.i0), 0,
                        q_full);
    }
  }
  int current = fetch(0);
  for (int64_t t = 0; t < tiles; ++t) {
    const int next = fetch(t + 1);  // in flight while this tile is issued
    const int st = int(t & 1);
    if (t >= 2) {
      sm90::mbarrier_wait(k_empty + st, unsigned((t >> 1) - 1) & 1u);
      sm90::mbarrier_wait(v_empty + st, unsigned((t >> 1) - 1) & 1u);
    }
    const int key0 = int(blk.kv_begin + t * kBlockN);
    if (lane == 0) {
      sm90::mbarrier_arrive_expect(k_full + st, Tile::kKVBytes);
      sm90::mbarrier_arrive_expect(v_full + st, Tile::kKVBytes);
    }
    __syncwarp();  // the stage's expected bytes are set before any of its loads
    if (lane < per_tile) {  // lane p loads page p of the tile
      const int slot = (key0 + lane * box) % pages.block_size;
      for (int cb = 0; cb < D / 64; ++cb) {
        const int offset = st * Tile::kKVBytes + cb * kBlockN * 128 + lane * box * 128;
        sm90::tma_load_4d(sK + offset, &maps.k, cb * 64, int(blk.hk), slot, current, k_full + st);
        sm90::tma_load_4d(sV + offset, &maps.v, cb * 64, int(blk.hk), slot, current, v_full + st);
      }
    }
    current = next;
  }
}

// Whether `pred` holds for any of the 256 consumer threads, at a barrier of theirs (named barrier
// 1, which orders their shared-memory writes before it as bar.sync does).
__device__ inline bool consumers_any(bool pred) {
  uint32_t result;
  asm volatile(
      "{\n .reg .pred p, q;\n setp.ne.u32 p, %1, 0;\n bar.red.or.pred q, 1, 256, p;\n selp.u32 %0, 1, 0, q;\n}\n"
      : "=r"(result)
      : "r"(uint32_t(pred))
      : "memory");
  return result != 0;
}

// v: the raw V tensor, read where an edge tile's V holds infinities or NaNs (flash_rows.cuh).
// kPaged: paged_prefill's caches (produce_paged), an instantiation of its own so that the dense
// kernels stay as they were.
template <class E, class Tile, bool kSoftcap, bool kPaged = false>
__global__ void __launch_bounds__(Tile::kThreads, 1)
    flash_attention_wgmma_kernel(const __grid_constant__ AttnMaps maps, const typename E::T* __restrict__ v,
                                 typename E::T* __restrict__ out, float* __restrict__ lse, AttnLayout a, Sequences seqs,
                                 Mask mask, int64_t m_tiles) {
#if XHAL_WGMMA_DEVICE
  constexpr int D = Tile::D, kBlockM = Tile::kBlockM, kBlockN = Tile::kBlockN;
  extern __shared__ unsigned char shared_raw[];
  unsigned char* sQ = shared_raw + (1024 - sm80::smem_address(shared_raw) % 1024) % 1024;
  unsigned char* sK = sQ + Tile::kQBytes;  // [2 stages]
  unsigned char* sV = sK + 2 * Tile::kKVBytes;  // [2 stages]
  uint64_t* bars = reinterpret_cast<uint64_t*>(sQ + Tile::kBarrierOffset);
  uint64_t* q_full = bars;  // Q landed
  uint64_t* k_full = bars + 1;  // [2]: K of the stage landed
  uint64_t* v_full = bars + 3;  // [2]: V of the stage landed
  uint64_t* k_empty = bars + 5;  // [2]: both consumers are done with the stage's K
  uint64_t* v_empty = bars + 7;  // [2]: ... and with its V

  FlashBlock<typename E::T> blk;
  if (!blk.locate(a, seqs, mask, m_tiles, kBlockM, kBlockN)) return;
  const int64_t tiles = (blk.kv_end - blk.kv_begin + kBlockN - 1) / kBlockN;
  const int wg = threadIdx.x / 128;
  if (threadIdx.x == 0) {
    sm90::mbarrier_init(q_full, 1);
    for (int st = 0; st < 2; ++st) {
      sm90::mbarrier_init(k_full + st, 1);
      sm90::mbarrier_init(v_full + st, 1);
      sm90::mbarrier_init(k_empty + st, 2);
      sm90::mbarrier_init(v_empty + st, 2);
    }
    sm90::mbarrier_init_fence();
  }
  __syncthreads();

  if (wg == 0) {  // producer
    sm90::registers_decrease<24>();
    // Paged caches take the first warp: its lanes fetch a tile's page indices ahead (one
    // coalesced load a tile, in flight while the previous tile is issued) and load a page each.
    if constexpr (kPaged) {
      if (threadIdx.x < 32) produce_paged<Tile>(maps, blk, tiles, sQ, sK, sV, q_full, k_full, v_full, k_empty, v_empty);
      return;
    }
    if (threadIdx.x != 0) return;
    const int batch = seqs.cu_q == nullptr ? int(blk.b) : 0;  // varlen rows are token offsets
    const int q_row = int(blk.q0 + blk.i0), k_row = int(blk.k0 + blk.kv_begin);
    sm90::mbarrier_arrive_expect(q_full, Tile::kQBytes);
    for (int cb = 0; cb < D / 64; ++cb) {
      sm90::tma_load_4d(sQ + cb * kBlockM * 128, &maps.q, cb * 64, int(blk.head), q_row, batch, q_full);
    }
    for (int64_t t = 0; t < tiles; ++t) {
      const int st = int(t & 1);
      const int key = k_row + int(t) * kBlockN;
      if (t >= 2) sm90::mbarrier_wait(k_empty + st, unsigned((t >> 1) - 1) & 1u);
      sm90::mbarrier_arrive_expect(k_full + st, Tile::kKVBytes);
      for (int cb = 0; cb < D / 64; ++cb) {
        sm90::tma_load_4d(sK + st * Tile::kKVBytes + cb * kBlockN * 128, &maps.k, cb * 64, int(blk.hk), key, batch,
                          k_full + st);
      }
      if (t >= 2) sm90::mbarrier_wait(v_empty + st, unsigned((t >> 1) - 1) & 1u);
      sm90::mbarrier_arrive_expect(v_full + st, Tile::kKVBytes);
      for (int cb = 0; cb < D / 64; ++cb) {
        sm90::tma_load_4d(sV + st * Tile::kKVBytes + cb * kBlockN * 128, &maps.v, cb * 64, int(blk.hk), key, batch,
                          v_full + st);
      }
    }
    return;
  }

  sm90::registers_increase<240>();
  // Consumer 0 or 1, from lane 0 so that the compiler sees a warp-uniform value: the descriptors
  // below then live in the uniform registers wgmma reads.
  const int cw = __shfl_sync(0xffffffffu, wg - 1, 0);
  const int warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;
  const int64_t first_row = blk.i0 + cw * 64 + warp * 16 + lane / 4;
  const int64_t row_index[2] = {first_row, first_row + 8};
  SoftmaxRows rows;
  rows.set_ranges(mask, row_index, blk.Sq, blk.Sk, blk.kv_begin);
  const ScoreScale scale(mask);
  // The descriptors of this consumer's Q rows and of stage 0's K and V (V read MN-major).
  const uint64_t q_desc = sm90::descriptor(sQ + cw * 64 * 128, 16, 1024);
  const uint64_t k_desc = sm90::descriptor(sK, 16, 1024), v_desc = sm90::descriptor(sV, kBlockN * 128, 1024);

  float o[Tile::kOTiles][4];
#pragma unroll
  for (int t = 0; t < Tile::kOTiles; ++t) o[t][0] = o[t][1] = o[t][2] = o[t][3] = 0.0f;
  float s[Tile::kSTiles][4];
  uint32_t p[Tile::kPSteps][4];
  float correction[2];
  auto parity = [](int64_t t) { return unsigned(t >> 1) & 1u; };  // of tile t's stage
  // S = Q Kᵀ of tile t, issued (its K landed: wait_keys) but not committed or waited for.
  auto wait_keys = [&](int64_t t) { sm90::mbarrier_wait(k_full + int(t & 1), parity(t)); };
  auto issue_scores = [&](int64_t t) {
    const uint64_t k_tile = sm90::advance(k_desc, int(t & 1) * Tile::kKVBytes);
#pragma unroll
    for (int kk = 0; kk < Tile::kKSteps; ++kk) {
      const int block = kk / 4, within = (kk % 4) * 32;
      sm90::mma_ss<E, kBlockN>(s, sm90::advance(q_desc, block * kBlockM * 128 + within),
                               sm90::advance(k_tile, block * kBlockN * 128 + within), kk > 0);
    }
  };
  // O += P V of tile t, issued (V landed: prepare_values waited). D = 256 takes two n128 wgmma a
  // key step, the second from V's third 64-column block on.
  auto issue_accumulate = [&](int64_t t) {
    const uint64_t v_tile = sm90::advance(v_desc, int(t & 1) * Tile::kKVBytes);
#pragma unroll
    for (int kk = 0; kk < Tile::kPSteps; ++kk) {
      const uint64_t v_step = sm90::advance(v_tile, kk * 16 * 128);
      if constexpr (D <= 128) {
        sm90::mma_rs<E, D>(o, p[kk], v_step);
      } else {
        sm90::mma_rs<E, 128>(o, p[kk], v_step);
        sm90::mma_rs<E, 128, 16>(o, p[kk], sm90::advance(v_step, 2 * kBlockN * 128));
      }
    }
  };
  // Waits for tile t's V. In an edge tile, infinities and NaNs of V are zeroed first, the
  // consumers' 256 threads each taking a share and meeting at a barrier before either reads the
  // tile; true when there were any, to be added back to the rows that see them
  // (add_non_finite_values).
  auto prepare_values = [&](int64_t t) {
    const int st = int(t & 1);
    sm90::mbarrier_wait(v_full + st, parity(t));
    if (!blk.edge_tile(int(t * kBlockN), kBlockN)) return false;  // the same for both consumers
    unsigned char* v_tile = sV + st * Tile::kKVBytes;
    bool any = false;
    for (int c = threadIdx.x - 128; c < Tile::kKVBytes / 16; c += 256) any |= zero_non_finite<E>(v_tile + c * 16);
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // the zeros before wgmma reads them
    return consumers_any(any);
  };
  // The scores of tile t (waited for) through the softmax into probabilities p.
  auto softmax = [&](int64_t t) {
    sm90::pin(s);
    online_softmax<kSoftcap, 4>(s, rows, int(t * kBlockN), scale, correction);
#pragma unroll
    for (int kk = 0; kk < Tile::kPSteps; ++kk) probabilities_as_a<E>(s, kk, p[kk]);
  };
  // Both consumers' arrivals free a stage's K or V for the producer.
  auto release = [&](uint64_t* empty, int64_t t) {
    if (threadIdx.x % 128 == 0) sm90::mbarrier_arrive(empty + int(t & 1));
  };
  // The consumers take turns at issuing their tile's wgmma (FA3's ping-pong): while one's run on the
  // tensor cores, the other's softmax runs on the other pipes. Named barrier 2 + c is consumer c's
  // turn: it waits there (bar.sync) for the other's arrival (bar.arrive), given once its wgmma
  // are issued. Consumer 0 goes first.
  auto turn_wait = [&] { asm volatile("bar.sync %0, 256;\n" ::"r"(2 + cw) : "memory"); };
  auto turn_pass = [&] { asm volatile("bar.arrive %0, 256;\n" ::"r"(3 - cw) : "memory"); };

  // The keys [bad_begin, bad_end) (relative to kv_begin) span the edge tiles whose V had
  // non-finite values zeroed; added back once, after the loop (add_non_finite_values).
  int bad_begin = -1, bad_end = -1;
  // Turn t + 1 of a consumer: P V of tile t and, kMore, the scores of tile t + 1, then the softmax
  // of those. kMore is a template flag: a wgmma under a branch makes ptxas serialise them all.
  auto turn = [&](int64_t t, auto more_tag) {
    constexpr bool kMore = decltype(more_tag)::value;
    const bool non_finite = prepare_values(t);
    if constexpr (kMore) wait_keys(t + 1);
    rescale(o, correction);
    turn_wait();
    sm90::pin(o);
    sm90::fence();
    issue_accumulate(t);
    if constexpr (kMore) issue_scores(t + 1);
    sm90::commit();
    if (kMore || cw == 0) turn_pass();
    sm90::wait<0>();
    sm90::pin(o);
    release(v_empty, t);
    if (non_finite) {  // rare
      if (bad_begin < 0) bad_begin = int(t * kBlockN);
      bad_end = int(t * kBlockN) + kBlockN;
    }
    if constexpr (kMore) {
      release(k_empty, t + 1);
      softmax(t + 1);
    }
  };
  // Turn 0 issues the scores of tile 0; each consumer has tiles + 1 turns, and consumer 1 gives
  // its first before its first turn, none after its last.
  sm90::mbarrier_wait(q_full, 0);
  if (tiles > 0) {
    if (cw == 1) turn_pass();
    wait_keys(0);
    turn_wait();
    sm90::fence();
    issue_scores(0);
    sm90::commit();
    turn_pass();
    sm90::wait<0>();
    release(k_empty, 0);
    softmax(0);
    for (int64_t t = 0; t + 1 < tiles; ++t) turn(t, std::true_type{});
    turn(tiles - 1, std::false_type{});
  }
  if (bad_begin >= 0) {
    const int64_t keys = blk.kv_end - blk.kv_begin;
    const int n = (keys < bad_end ? int(keys) : bad_end) - bad_begin;
    const typename E::T* vb = v + blk.b * a.v[0] + (blk.k0 + blk.kv_begin + bad_begin) * a.v[1] + blk.hk * a.v[2];
    add_non_finite_values<kPaged>(o, rows, bad_begin, n, [&](int j) {
      if constexpr (kPaged) return maps.pages.row(v, a.v, blk.b, blk.kv_begin + bad_begin + j, blk.hk);
      return vb + j * a.v[1];
    });
  }
  store_rows<E>(o, rows, scale.max_to_log2<kSoftcap>(), row_index, blk.Sq, out, a, blk.b, blk.head, blk.q0, lse);
#endif
}

template <class E, class Tile, bool kSoftcap>
struct WgmmaFlashKernels {
  static constexpr auto kernel = &flash_attention_wgmma_kernel<E, Tile, kSoftcap>;
};

template <class E, class Tile, bool kSoftcap>
struct WgmmaPagedFlashKernels {
  static constexpr auto kernel = &flash_attention_wgmma_kernel<E, Tile, kSoftcap, true>;
};

}  // namespace xhal::gpu

#endif

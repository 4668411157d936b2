// What the flash-attention kernels share, whatever computes their scores: the rows and keys a block
// covers, the online softmax over a score tile, and the final normalisation and store. Scores and
// the output accumulator are in the m16n8 accumulator layout that mma.sync and wgmma share: a
// thread holds, for each 8-column tile t, columns 8t + 2 * tig + {0, 1} of two rows (h = 0: row
// group, h = 1: row group + 8).
#pragma once

#if !defined(__HIPCC__)

#include "attention_layout.cuh"
#include "mma_sm80.cuh"

namespace xhal::gpu {

// The query rows [i0, i0 + kBlockM) of one (sequence, head) that block blockIdx covers, and the
// key range [kv_begin, kv_end) some of them may see (visible ranges grow with the row, so it runs
// from the first row's lo, rounded down to a key tile, to the last row's hi).
template <class T>
struct FlashBlock {
  int64_t b, head, hk, q0, k0, Sq, Sk, i0, kv_begin, kv_end;
  int all_lo, all_hi;  // the keys every row of the block sees, relative to kv_begin
  const T *qb, *kb, *vb;  // this (sequence, head)'s first row of q, k and v (see bases())

  // False when the block has no rows (a varlen sequence shorter than the longest).
  __device__ bool locate(const AttnLayout& a, const Sequences& seqs, const Mask& mask, int64_t m_tiles, int block_m,
                         int block_n) {
    b = blockIdx.z, head = blockIdx.y, hk = head / a.group;
    const int64_t m_tile = m_tiles - 1 - blockIdx.x;  // the longest (causal) tiles start first
    seqs.span(b, &q0, &Sq, &k0, &Sk);
    i0 = m_tile * block_m;
    if (i0 >= Sq) return false;
    int64_t lo_first, hi_first, lo_last, hi_last;
    mask.visible(i0, Sq, Sk, &lo_first, &hi_first);
    mask.visible((i0 + block_m < Sq ? i0 + block_m : Sq) - 1, Sq, Sk, &lo_last, &hi_last);
    kv_begin = lo_first / block_n * block_n;
    kv_end = hi_last;
    all_lo = int(lo_last - kv_begin), all_hi = int(hi_first - kv_begin);  // keys fit in int32 (flash_supports)
    return true;
  }
  // Whether the mask hides some of keys [jt, jt + n) (relative to kv_begin) from some row of the
  // block (the diagonal tiles of a causal mask, a window's edges, keys past kv_end): there P has
  // zeros that must not meet a non-finite V (zero_non_finite, add_non_finite_values).
  __device__ bool edge_tile(int jt, int n) const { return jt < all_lo || jt + n > all_hi; }
  // With pages (paged caches: a.k and a.v are block, slot and head strides) kb and vb are the
  // head's row of block 0, and a key's row goes through the table.
  __device__ void bases(const T* q, const T* k, const T* v, const AttnLayout& a, bool paged = false) {
    qb = q + b * a.q[0] + q0 * a.q[1] + head * a.q[2];
    kb = k + (paged ? 0 : b * a.k[0] + k0 * a.k[1]) + hk * a.k[2];
    vb = v + (paged ? 0 : b * a.v[0] + k0 * a.v[1]) + hk * a.v[2];
  }
};

// The running state of a thread's two rows and the key range [lo, hi) each may see, relative to
// the first key tile of the block.
struct SoftmaxRows {
  float max[2] = {-INFINITY, -INFINITY};
  float sum[2] = {0.0f, 0.0f};
  int lo[2], hi[2];

  // i: the two rows' indices; rows at or past Sq see nothing.
  __device__ void set_ranges(const Mask& mask, const int64_t (&i)[2], int64_t Sq, int64_t Sk, int64_t kv_begin) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      int64_t l = kv_begin, u = kv_begin;
      if (i[h] < Sq) mask.visible(i[h], Sq, Sk, &l, &u);
      lo[h] = int(l - kv_begin);
      hi[h] = int(u - kv_begin);
    }
  }
};

// Score scaling in log2 units (log2(e) folded in), with or without a softcap. The running max is
// kept in the units online_softmax compares in: the raw scores without a softcap (the scale then
// joins the subtraction of the max in one FFMA per score, which a positive scale allows:
// flash_supports), log2 units with one; max_to_log2 converts it.
struct ScoreScale {
  float scale_log2, scale_over_cap, cap_log2;
  __device__ explicit ScoreScale(const Mask& mask) {
    constexpr float kLog2e = 1.4426950408889634f;
    scale_log2 = mask.scale * kLog2e;
    scale_over_cap = mask.softcap > 0.0f ? mask.scale / mask.softcap : 0.0f;
    cap_log2 = mask.softcap * kLog2e;
  }
  template <bool kSoftcap>
  __device__ float max_to_log2() const {
    return kSoftcap ? 1.0f : scale_log2;
  }
};

// r[0] = op over r[0, kLeft), as a tree. A template recursion rather than a loop halving its bound,
// which nvcc did not unroll (r went to the stack: 70% slower).
template <int N, int kLeft, class Op>
__device__ inline void fold_tree_step(float (&r)[N], Op op) {
  if constexpr (kLeft > 1) {
    constexpr int kHalf = (kLeft + 1) / 2;
#pragma unroll
    for (int t = 0; t < kLeft / 2; ++t) r[t] = op(r[t], r[t + kHalf]);
    fold_tree_step<N, kHalf>(r, op);
  }
}

// Reduces a thread's values of row h (h = 0: elements 0 and 1 of each tile, h = 1: 2 and 3) with op:
// kChains independent chains, then a tree.
template <int kChains, int kSTiles, class Op>
__device__ inline float reduce_row(const float (&s)[kSTiles][4], int h, Op op) {
  constexpr int kWays = kSTiles < kChains ? kSTiles : kChains;
  float r[kWays];
#pragma unroll
  for (int t = 0; t < kSTiles; ++t) {
    const float pair = op(s[t][2 * h], s[t][2 * h + 1]);
    r[t % kWays] = t < kWays ? pair : op(r[t % kWays], pair);
  }
  fold_tree_step<kWays, kWays>(r, op);
  return r[0];
}

// Turns the raw scores s of key tile [jt, jt + 8 * kSTiles) into probabilities (unnormalised,
// relative to the running max), masks keys outside each row's range and updates the running max
// and sum. correction[h]: the factor the output accumulator's row h must be scaled by (rescale()).
// kChains: independent chains of the row max and sum (shorter dependencies, more registers: the
// mma.sync kernel, at its register limit, keeps one).
template <bool kSoftcap, int kChains = 1, int kSTiles>
__device__ inline void online_softmax(float (&s)[kSTiles][4], SoftmaxRows& rows, int jt, const ScoreScale& sc,
                                      float (&correction)[2]) {
  const int tig = threadIdx.x % 4;
  constexpr int kKeys = 8 * kSTiles;
  const bool inside = jt >= rows.lo[0] && jt >= rows.lo[1] && jt + kKeys <= rows.hi[0] && jt + kKeys <= rows.hi[1];
  if (kSoftcap || !inside) {
#pragma unroll
    for (int t = 0; t < kSTiles; ++t) {
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int h = c / 2;
        float x = s[t][c];
        if constexpr (kSoftcap) x = sc.cap_log2 * tanhf(x * sc.scale_over_cap);
        if (!inside) {
          const int j = jt + t * 8 + tig * 2 + (c & 1);
          if (j < rows.lo[h] || j >= rows.hi[h]) x = -INFINITY;
        }
        s[t][c] = x;
      }
    }
  }
  const float to_log2 = sc.max_to_log2<kSoftcap>();
  const auto max_op = [](float x, float y) { return fmaxf(x, y); };
  const auto add_op = [](float x, float y) { return x + y; };
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float tile_max = reduce_row<kChains>(s, h, max_op);
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
    const float m_new = fmaxf(rows.max[h], tile_max);
    // In log2 units; 0 for a row with nothing visible yet.
    const float base = m_new == -INFINITY ? 0.0f : m_new * to_log2;
    correction[h] = sm80::fast_exp2(rows.max[h] * to_log2 - base);
    rows.max[h] = m_new;
#pragma unroll
    for (int t = 0; t < kSTiles; ++t) {
      s[t][2 * h] = sm80::fast_exp2(fmaf(s[t][2 * h], to_log2, -base));
      s[t][2 * h + 1] = sm80::fast_exp2(fmaf(s[t][2 * h + 1], to_log2, -base));
    }
    rows.sum[h] = rows.sum[h] * correction[h] + reduce_row<kChains>(s, h, add_op);
  }
}

// Scales the output accumulator's rows by online_softmax's corrections; once the running max
// settles most tiles leave it unchanged, and the multiplies are skipped.
template <int kOTiles>
__device__ inline void rescale(float (&o)[kOTiles][4], const float (&correction)[2]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    if (__any_sync(0xffffffffu, correction[h] != 1.0f)) {
#pragma unroll
      for (int t = 0; t < kOTiles; ++t) o[t][2 * h] *= correction[h], o[t][2 * h + 1] *= correction[h];
    }
  }
}

// Probabilities of keys [16 kk, 16 kk + 16) as the A operand of the next mma (16-bit pairs).
template <class E, int kSTiles>
__device__ inline void probabilities_as_a(const float (&s)[kSTiles][4], int kk, uint32_t (&pa)[4]) {
  pa[0] = sm80::pack2<E>(s[2 * kk][0], s[2 * kk][1]);
  pa[1] = sm80::pack2<E>(s[2 * kk][2], s[2 * kk][3]);
  pa[2] = sm80::pack2<E>(s[2 * kk + 1][0], s[2 * kk + 1][1]);
  pa[3] = sm80::pack2<E>(s[2 * kk + 1][2], s[2 * kk + 1][3]);
}

// Non-finite values in an edge tile's V: P V on tensor cores would give rows that do not see them
// 0 * inf = NaN. Where a tile holds some, they are replaced by 0 in shared memory before P V, and
// each row that sees them has them added to its accumulator afterwards (add_non_finite_values):
// for the row's p > 0, p * inf or p * NaN only depends on the value, and inf or NaN absorbs the
// rest of the sum. Both steps run only for such tiles.

// The bits of a 16-bit E's exponent, twice (a word holds two values).
template <class E>
__device__ constexpr uint32_t exponent_bits2() {
  return E::kDType == XHAL_DTYPE_BF16 ? 0x7F807F80u : 0x7C007C00u;
}

// Replaces the infinities and NaNs among the eight 16-bit values at p (16 bytes of shared memory)
// by 0; true when there were any.
template <class E>
__device__ inline bool zero_non_finite(void* p) {
  uint4 c = *reinterpret_cast<const uint4*>(p);
  constexpr uint32_t kExp = exponent_bits2<E>();
  uint32_t* w = reinterpret_cast<uint32_t*>(&c);
  uint32_t any = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint32_t bad = __vcmpeq2(w[i] & kExp, kExp);  // 0xFFFF per value with all exponent bits set
    any |= bad;
    w[i] &= ~bad;
  }
  if (any != 0) *reinterpret_cast<uint4*>(p) = c;
  return any != 0;
}

// After the last P V, where edge tiles had non-finite V values zeroed: adds each non-finite value of
// keys [jt, jt + n) (relative to kv_begin, as rows.lo/hi are) to the output accumulator of the
// thread's rows that see its key. v_row(j): key jt + j's row of V in memory (its original values).
// A value the tensor cores already added (a tile in the range that was not an edge tile) is added
// again, which leaves inf or NaN as it was. After the loop, where the scores' registers are free.
// kMissingRows: v_row may give nullptr (a paged key in a block outside the cache, read as zeros);
// a template flag, since the test costs the dense kernels a register.
template <bool kMissingRows = false, int kOTiles, class VRow>
__device__ inline void add_non_finite_values(float (&o)[kOTiles][4], const SoftmaxRows& rows, int jt, int n,
                                             VRow v_row) {
  const int tig = threadIdx.x % 4;
  for (int j = 0; j < n; ++j) {
    const int key = jt + j;
    const bool seen[2] = {key >= rows.lo[0] && key < rows.hi[0], key >= rows.lo[1] && key < rows.hi[1]};
    if (!seen[0] && !seen[1]) continue;
    const auto* vr = v_row(j);
    if constexpr (kMissingRows) {
      if (vr == nullptr) continue;
    }
#pragma unroll
    for (int t = 0; t < kOTiles; ++t) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float value = float(vr[t * 8 + tig * 2 + e]);
        if (isfinite(value)) continue;
        if (seen[0]) o[t][e] += value;
        if (seen[1]) o[t][2 + e] += value;
      }
    }
  }
}

// Divides the thread's two output rows by their sums and stores them (and the lse when asked);
// i: the rows' indices within the sequence, rows at or past Sq are not written; max_to_log2: ScoreScale's.
template <class E, int kOTiles>
__device__ inline void store_rows(const float (&o)[kOTiles][4], const SoftmaxRows& rows, float max_to_log2,
                                  const int64_t (&i)[2], int64_t Sq, typename E::T* out, const AttnLayout& a, int64_t b,
                                  int64_t head, int64_t q0, float* lse) {
  constexpr float kLn2 = 0.6931471805599453f;
  const int tig = threadIdx.x % 4;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float sum = rows.sum[h];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    if (i[h] >= Sq) continue;
    // sum == 0: the row saw no key, 0 and lse = -inf. A NaN sum (a NaN query or key) is not that:
    // it reaches the output and the lse.
    const bool none = sum == 0.0f;
    const float inv = 1.0f / sum;
    typename E::T* orow = out + b * a.o[0] + (q0 + i[h]) * a.o[1] + head * a.o[2];
#pragma unroll
    for (int t = 0; t < kOTiles; ++t) {
      *reinterpret_cast<uint32_t*>(orow + t * 8 + tig * 2) =
          sm80::pack2<E>(none ? 0.0f : o[t][2 * h] * inv, none ? 0.0f : o[t][2 * h + 1] * inv);
    }
    if (lse != nullptr && tig == 0) {
      lse[b * a.lse[0] + head * a.lse[1] + (q0 + i[h]) * a.lse[2]] =
          none ? -INFINITY : rows.max[h] * max_to_log2 * kLn2 + logf(sum);
    }
  }
}

}  // namespace xhal::gpu

#endif

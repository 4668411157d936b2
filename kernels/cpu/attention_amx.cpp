// attention, attention_varlen and paged_prefill in bf16 on CPUs with AMX: the BLAS kernel's loop (tasks of up to
// kRows query rows of one kv head's group, tiles of kKeys keys, online softmax in f32), with both
// matrix products on the tile unit (TDPBF16PS: bf16 pairs, f32 sums) instead of sgemm, so nothing
// is widened to f32 first. K and V are laid out once per (sequence, kv head), before its tasks
// run, in the pair-interleaved form the B operand wants (per task and tile where no scratch can be
// had); the queries are copied once per task, unscaled (the scale is applied to the f32 scores,
// so q keeps its bf16 value), and P is rounded to bf16 for P V, as FlashAttention does on GPUs.
// Rows, keys and head dims are padded with zeros to the tile shapes (32 rows, 32 keys, 32 dims).
// Registered for bf16 above the BLAS kernel where the CPU has AMX-BF16 and AVX512_BF16 and Linux
// grants the tile state.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/attention_amx.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#if HWY_ARCH_X86
#include <immintrin.h>
#endif

#include "kernels/cpu/amx.hpp"
#include "kernels/cpu/attention_core.hpp"
#include "kernels/cpu/attention_softmax-inl.h"
#include "kernels/cpu/attention_tasks.hpp"
#include "kernels/cpu/scratch.hpp"
#include "kernels/cpu/simd_element-inl.h"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {

#ifdef XHAL_CPU_AVX512
constexpr int64_t kRows = 256;  // query rows per task, the group's heads together (as the BLAS kernel)
constexpr int64_t kKeys = 256;  // keys per tile: each accumulator tile takes 8 products per load and store
constexpr int64_t kTileBf16 = 512;  // bf16 elements in one 16 x 64-byte tile

inline int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// A thread's buffers for tasks of up to n rows, carved from its workspace (scratch.hpp): bf16
// queries [n_pad][D_pad], K and V tiles in B-operand form (for tasks that pack their own), P
// [n_pad][kKeys]; f32 scores [n_pad][kKeys], accumulators [n_pad][Dv_pad], running max and sum.
struct AmxWorkspace {
  uint16_t *q, *k, *v, *p;
  float *s, *acc, *m, *l;
  static AmxWorkspace carve(Carver& c, int64_t n, int64_t D, int64_t Dv) {
    const int64_t n_pad = round_up(n, 32), D_pad = round_up(D, 32), Dv_pad = round_up(Dv, 32);
    return {c.take<uint16_t>(n_pad, D_pad),
            c.take<uint16_t>(kKeys, D_pad),
            c.take<uint16_t>(kKeys, Dv_pad),
            c.take<uint16_t>(n_pad, kKeys),
            c.take<float>(n_pad, kKeys),
            c.take<float>(n_pad, Dv_pad),
            c.take<float>(n),
            c.take<float>(n)};
  }
};

// Mask of the first `count` (<= 32) 16-bit lanes.
inline __mmask32 first_lanes(int64_t count) { return count >= 32 ? ~__mmask32(0) : (__mmask32(1) << count) - 1; }

// r[i] (16 rows of 16 32-bit elements) transposed in place.
HWY_INLINE void transpose_16x16_epi32(__m512i r[16]) {
  __m512i t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  // u[4i + c], 128-bit lane L: element 4L + c of rows 4i..4i+3.
  __m512i u[16];
  for (int i = 0; i < 4; ++i) {
    u[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int c = 0; c < 4; ++c) {
    const __m512i lo_a = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x44), hi_a = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xEE);
    const __m512i lo_b = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x44);
    const __m512i hi_b = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xEE);
    r[c] = _mm512_shuffle_i32x4(lo_a, lo_b, 0x88);
    r[4 + c] = _mm512_shuffle_i32x4(lo_a, lo_b, 0xDD);
    r[8 + c] = _mm512_shuffle_i32x4(hi_a, hi_b, 0x88);
    r[12 + c] = _mm512_shuffle_i32x4(hi_a, hi_b, 0xDD);
  }
}

// Keys [j0, j0 + jn) of K as B operands of S = Q Kᵀ, one tile per 16 keys and 32 dims: row w of a
// tile is dims 2w, 2w + 1 of each of its 16 keys, i.e. K's 32-bit pairs transposed. Keys past jn
// and dims past D are zero.
template <class K>
void pack_k(K k, int64_t j0, int64_t jn, int64_t jn_pad, int64_t D, int64_t chunks, uint16_t* dst) {
  for (int64_t kb = 0; kb < jn_pad / 16; ++kb) {
    for (int64_t c = 0; c < chunks; ++c) {
      const __mmask32 dims = first_lanes(D - c * 32);
      __m512i r[16];
      for (int64_t i = 0; i < 16; ++i) {
        const int64_t j = kb * 16 + i;
        r[i] = j < jn ? _mm512_maskz_loadu_epi16(dims, k(j0 + j) + c * 32) : _mm512_setzero_si512();
      }
      transpose_16x16_epi32(r);
      uint16_t* tile = dst + (kb * chunks + c) * kTileBf16;
      for (int i = 0; i < 16; ++i) _mm512_storeu_si512(tile + i * 32, r[i]);
    }
  }
}

// Keys [j0, j0 + jn) of V as B operands of O += P V, one tile per 32 keys and 16 dims: row w of a
// tile holds keys 2w and 2w + 1 interleaved, dim by dim. Keys past jn and dims past Dv are zero.
template <class V>
void pack_v(V v, int64_t j0, int64_t jn, int64_t jn_pad, int64_t Dv, int64_t Dv_pad, uint16_t* dst) {
  // vpermt2w indices: the low / high 16 dims of two 32-dim rows a and b, as a0 b0 a1 b1 ...
  alignas(64) static constexpr uint16_t kLow[32] = {0, 32, 1, 33, 2,  34, 3,  35, 4,  36, 5,  37, 6,  38, 7,  39,
                                                    8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  alignas(64) static constexpr uint16_t kHigh[32] = {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53, 22, 54, 23, 55,
                                                     24, 56, 25, 57, 26, 58, 27, 59, 28, 60, 29, 61, 30, 62, 31, 63};
  const __m512i low = _mm512_load_si512(kLow), high = _mm512_load_si512(kHigh);
  const int64_t blocks = Dv_pad / 16;
  for (int64_t pb = 0; pb < jn_pad / 32; ++pb) {
    for (int64_t w = 0; w < 16; ++w) {
      const int64_t j = pb * 32 + 2 * w;
      for (int64_t e = 0; e < Dv_pad / 32; ++e) {
        const __mmask32 dims = first_lanes(Dv - e * 32);
        const __m512i a = j < jn ? _mm512_maskz_loadu_epi16(dims, v(j0 + j) + e * 32) : _mm512_setzero_si512();
        const __m512i b = j + 1 < jn ? _mm512_maskz_loadu_epi16(dims, v(j0 + j + 1) + e * 32) : _mm512_setzero_si512();
        uint16_t* tile = dst + (pb * blocks + 2 * e) * kTileBf16 + w * 32;
        _mm512_storeu_si512(tile, _mm512_permutex2var_epi16(a, low, b));
        _mm512_storeu_si512(tile + kTileBf16, _mm512_permutex2var_epi16(a, high, b));
      }
    }
  }
}

// Tiles 0-3 += the 2 x 2 block of products of A rows a0, a1 (tiles 4, 5; rows a_stride bytes
// apart) with B tiles b0, b1 (6, 7; packed, rows 64 bytes apart): 0 = a0 b0, 1 = a0 b1, 2 = a1 b0,
// 3 = a1 b1.
HWY_INLINE void products_2x2(const uint16_t* a0, const uint16_t* a1, int64_t a_stride, const uint16_t* b0,
                             const uint16_t* b1) {
  XHAL_TILE_LOAD(4, a0, a_stride);
  XHAL_TILE_LOAD(5, a1, a_stride);
  XHAL_TILE_LOAD(6, b0, 64);
  XHAL_TILE_LOAD(7, b1, 64);
  XHAL_TILE_DPBF16PS(0, 4, 6);
  XHAL_TILE_DPBF16PS(1, 4, 7);
  XHAL_TILE_DPBF16PS(2, 5, 6);
  XHAL_TILE_DPBF16PS(3, 5, 7);
}

// Tiles 0-3 loaded from / stored to the 32 x 32 f32 block at c (rows `stride` floats apart), in
// products_2x2's order.
HWY_INLINE void load_2x2(const float* c, int64_t stride) {
  XHAL_TILE_LOAD(0, c, stride * 4);
  XHAL_TILE_LOAD(1, c + 16, stride * 4);
  XHAL_TILE_LOAD(2, c + 16 * stride, stride * 4);
  XHAL_TILE_LOAD(3, c + 16 * stride + 16, stride * 4);
}

HWY_INLINE void store_2x2(float* c, int64_t stride) {
  XHAL_TILE_STORE(0, c, stride * 4);
  XHAL_TILE_STORE(1, c + 16, stride * 4);
  XHAL_TILE_STORE(2, c + 16 * stride, stride * 4);
  XHAL_TILE_STORE(3, c + 16 * stride + 16, stride * 4);
}

// s[n_pad][kKeys] = q[n_pad][D_pad] · Kᵀ for the tile's jn_pad keys: blocks of 32 rows x 32 keys,
// four accumulator tiles (0-3), two of queries (4, 5), two of keys (6, 7).
void scores_amx(const uint16_t* q, const uint16_t* k, float* s, int64_t n_pad, int64_t jn_pad, int64_t chunks) {
  const int64_t q_stride = chunks * 64;  // bytes
  for (int64_t rb = 0; rb < n_pad; rb += 32) {
    const uint16_t* q0 = q + rb * chunks * 32;
    const uint16_t* q1 = q0 + 16 * chunks * 32;
    for (int64_t kb = 0; kb < jn_pad / 16; kb += 2) {
      XHAL_TILE_ZERO(0);
      XHAL_TILE_ZERO(1);
      XHAL_TILE_ZERO(2);
      XHAL_TILE_ZERO(3);
      for (int64_t c = 0; c < chunks; ++c) {
        products_2x2(q0 + c * 32, q1 + c * 32, q_stride, k + (kb * chunks + c) * kTileBf16,
                     k + ((kb + 1) * chunks + c) * kTileBf16);
      }
      store_2x2(s + rb * kKeys + kb * 16, kKeys);
    }
  }
}

// acc[n_pad][Dv_pad] += p[n_pad][kKeys] · V for the tile's jn_pad keys: blocks of 32 rows x 32
// dims, each accumulator tile loaded once and stored once per tile of keys.
void pv_amx(const uint16_t* p, const uint16_t* v, float* acc, int64_t n_pad, int64_t jn_pad, int64_t Dv_pad) {
  const int64_t p_stride = kKeys * 2, blocks = Dv_pad / 16;  // bytes, tiles
  for (int64_t rb = 0; rb < n_pad; rb += 32) {
    const uint16_t* p0 = p + rb * kKeys;
    const uint16_t* p1 = p0 + 16 * kKeys;
    for (int64_t e = 0; e < blocks; e += 2) {
      float* c = acc + rb * Dv_pad + e * 16;
      load_2x2(c, Dv_pad);
      for (int64_t pb = 0; pb < jn_pad / 32; ++pb) {
        products_2x2(p0 + pb * 32, p1 + pb * 32, p_stride, v + (pb * blocks + e) * kTileBf16,
                     v + (pb * blocks + e + 1) * kTileBf16);
      }
      store_2x2(c, Dv_pad);
    }
  }
}

// Query rows [i0, i1) of every query head of one kv head's group (accessors as in
// attention_tasks.hpp; bf16 storage). tiles(j0, jn, jn_pad) gives the packed K and V of keys
// [j0, j0 + jn) (j0 a multiple of kKeys), zero from Sk on; keys past jn up to jn_pad may be the
// sequence's next keys, which P leaves out. v(j): key j's V row, for tiles whose masked keys hold
// a non-finite V (pv_of_visible_keys).
template <class Q, class V, class Tiles, class O, class L>
void attend_tile_amx(int64_t group, int64_t i0, int64_t i1, int64_t Sq, int64_t Sk, int64_t D, int64_t Dv,
                     const MaskParams& mask, Q q, V v, Tiles tiles, O out, L lse, const AmxWorkspace& w) {
  const int64_t rows = i1 - i0, n = group * rows, n_pad = round_up(n, 32);  // row r = g * rows + (i - i0)
  const int64_t D_pad = round_up(D, 32), Dv_pad = round_up(Dv, 32), chunks = D_pad / 32;
  std::fill(w.q, w.q + n_pad * D_pad, uint16_t(0));
  for (int64_t g = 0; g < group; ++g) {
    for (int64_t i = i0; i < i1; ++i) std::memcpy(w.q + (g * rows + i - i0) * D_pad, q(g, i), size_t(D) * 2);
  }
  std::fill(w.p, w.p + n_pad * kKeys, uint16_t(0));  // padded rows stay 0
  std::fill(w.acc, w.acc + n_pad * Dv_pad, 0.0f);
  std::fill(w.m, w.m + n, -std::numeric_limits<float>::infinity());
  std::fill(w.l, w.l + n, 0.0f);
  // The scores come out unscaled: the softmax applies scale (and log2(e) for base 2) in f32.
  const float pre = mask.softcap > 0.0f ? mask.scale : mask.scale * kLog2e;
  int64_t lo_all, hi_all;
  mask.visible_range_of_rows(i0, i1, Sq, Sk, &lo_all, &hi_all);
  amx_configure_16x64();
  for (int64_t j0 = lo_all / kKeys * kKeys; j0 < hi_all; j0 += kKeys) {
    const int64_t jn = std::min(kKeys, hi_all - j0), jn_pad = round_up(jn, 32);
    const auto [k_tile, v_tile] = tiles(j0, jn, jn_pad);
    scores_amx(w.q, k_tile, w.s, n_pad, jn_pad, chunks);
    const bool masked = softmax_rows<BF16Native>(mask, i0, rows, n, Sq, Sk, j0, jn, jn_pad, w.s, w.p, kKeys, pre, w.m,
                                                 w.l, w.acc, Dv_pad, Dv);
    const auto v_row = [&](int64_t j) { return v(j0 + j); };
    if (masked && any_non_finite<BF16>(v_row, jn, Dv)) {
      pv_of_visible_keys<BF16, BF16>(mask, i0, rows, n, Sq, Sk, j0, jn, w.p, kKeys, v_row, Dv, w.acc, Dv_pad);
    } else {
      pv_amx(w.p, v_tile, w.acc, n_pad, jn_pad, Dv_pad);
    }
  }
  amx_release();
  for (int64_t r = 0; r < n; ++r) {
    const int64_t g = r / rows, i = i0 + r % rows;
    finish_row<BF16Native>(w.acc + r * Dv_pad, w.l[r], w.m[r], Dv, out(g, i), lse(g, i));
  }
}
#endif  // XHAL_CPU_AVX512

#ifdef XHAL_CPU_AVX512
// K and V of (sequence, kv head) pairs in B-operand form, packed once for all of a pair's tasks
// (which would otherwise each pack every tile they see: 8 tasks of 256 rows per head at 2048
// tokens). A pair's tiles start at the first tile any of its rows sees; tile t holds K then V.
class PackedPairs {
 public:
  PackedPairs(const AttentionRows<uint16_t>& at, const MaskParams& mask)
      : at_(at), D_pad_(round_up(at.q.size(-1), 32)), Dv_pad_(round_up(at.v.size(-1), 32)) {
    for (int64_t b = 0; b < int64_t(at.seqs.size()); ++b) {
      const SequenceSpan& seq = at.seqs[size_t(b)];
      int64_t lo, hi;
      mask.visible_range_of_rows(0, seq.Sq, seq.Sq, seq.Sk, &lo, &hi);
      const int64_t t0 = lo / kKeys, t1 = lo < hi ? (hi + kKeys - 1) / kKeys : t0;
      for (int64_t h = 0; h < at.kv_heads(); ++h) pairs_.push_back({b, h, t0, t1, hi, nullptr});
    }
  }

  // Consecutive pairs [p0, p1) whose packed K and V together fit in kBudgetBytes (a pair larger
  // than that alone), so that the scratch does not grow with the batch; and the largest group's
  // bytes, the scratch they need.
  std::vector<std::pair<int64_t, int64_t>> groups(int64_t* scratch_bytes) const {
    constexpr int64_t kBudgetBytes = int64_t(64) << 20;
    std::vector<std::pair<int64_t, int64_t>> out;
    *scratch_bytes = 0;
    for (int64_t p0 = 0, p1; p0 < count(); p0 = p1) {
      int64_t bytes = pair_bytes(p0);
      for (p1 = p0 + 1; p1 < count() && bytes + pair_bytes(p1) <= kBudgetBytes; ++p1) bytes += pair_bytes(p1);
      out.push_back({p0, p1});
      *scratch_bytes = std::max(*scratch_bytes, bytes);
    }
    return out;
  }

  // Packs pairs [p0, p1) into dst (their pair_bytes in all), their tiles in parallel.
  void pack(int64_t p0, int64_t p1, uint16_t* dst) {
    std::vector<std::pair<int64_t, int64_t>> jobs;  // (pair, tile)
    for (int64_t p = p0; p < p1; ++p) {
      Pair& pr = pairs_[size_t(p)];
      pr.base = dst;
      dst += (pr.t1 - pr.t0) * tile_elems();
      for (int64_t t = pr.t0; t < pr.t1; ++t) jobs.push_back({p, t});
    }
    const int64_t D = at_.q.size(-1), Dv = at_.v.size(-1);
#pragma omp parallel for schedule(dynamic)
    for (int64_t n = 0; n < int64_t(jobs.size()); ++n) {
      const auto [p, t] = jobs[size_t(n)];
      const Pair& pr = pairs_[size_t(p)];
      const int64_t j0 = t * kKeys, jn = std::min(kKeys, pr.hi - j0), jn_pad = round_up(jn, 32);
      uint16_t* k_tile = tile_of(p, t);
      pack_k([&](int64_t j) { return at_.key(pr.seq, j, pr.hkv); }, j0, jn, jn_pad, D, D_pad_ / 32, k_tile);
      pack_v([&](int64_t j) { return at_.value(pr.seq, j, pr.hkv); }, j0, jn, jn_pad, Dv, Dv_pad_,
             k_tile + kKeys * D_pad_);
    }
  }

  // Pair p's packed K and V of the tile starting at key j0 (once pack has placed the pair).
  std::pair<const uint16_t*, const uint16_t*> tile(int64_t p, int64_t j0) const {
    const uint16_t* k_tile = tile_of(p, j0 / kKeys);
    return {k_tile, k_tile + kKeys * D_pad_};
  }

 private:
  struct Pair {
    int64_t seq, hkv, t0, t1, hi;  // tiles [t0, t1); keys below hi
    uint16_t* base;  // where pack put tile t0
  };
  int64_t count() const { return int64_t(pairs_.size()); }
  uint16_t* tile_of(int64_t p, int64_t t) const {  // K, then V, of pair p's tile t
    return pairs_[size_t(p)].base + (t - pairs_[size_t(p)].t0) * tile_elems();
  }
  int64_t tile_elems() const { return kKeys * (D_pad_ + Dv_pad_); }
  int64_t pair_bytes(int64_t p) const {
    return (pairs_[size_t(p)].t1 - pairs_[size_t(p)].t0) * tile_elems() * int64_t(sizeof(uint16_t));
  }

  const AttentionRows<uint16_t>& at_;
  int64_t D_pad_, Dv_pad_;
  std::vector<Pair> pairs_;
};
#endif  // XHAL_CPU_AVX512

// XHAL_ERR_OUT_OF_MEMORY when the allocator had no workspaces to give; XHAL_ERR_INTERNAL where this
// target has no AVX-512 (the kernel's `supports` keeps it from running there).
xhal_status attention_amx(const xhal_op_call* c, const std::vector<SequenceSpan>& seqs, bool batched) {
#ifdef XHAL_CPU_AVX512
  const MaskParams mask = MaskParams::from(c->params);
  const AttentionRows<uint16_t> at(c, seqs, batched);
  const int64_t rows = std::max<int64_t>(8, kRows / std::max<int64_t>(1, query_group(c)));
  PackedPairs packed(at, mask);
  int64_t scratch_bytes;
  const std::vector<std::pair<int64_t, int64_t>> groups = packed.groups(&scratch_bytes);
  const AttentionTasks<uint16_t> all(at, rows, 0, int64_t(seqs.size()) * at.kv_heads());
  const int64_t n = at.q.size(-2) == 0 ? 0 : at.group() * all.max_rows(), D = at.q.size(-1), Dv = at.v.size(-1);
  Carver sizing;
  AmxWorkspace::carve(sizing, n, D, Dv);
  const ThreadWorkspaces workspaces(c, sizing.bytes(), all.count());
  if (!workspaces.ok()) return XHAL_ERR_OUT_OF_MEMORY;
  // Where the allocator has no scratch to give, each task packs the tiles it sees instead.
  const Scratch scratch(c, scratch_bytes);
  const bool pack_once = scratch.data() != nullptr;
  for (const auto [p0, p1] : groups) {
    if (pack_once) packed.pack(p0, p1, static_cast<uint16_t*>(scratch.data()));
    AttentionTasks<uint16_t>(at, rows, p0, p1)
        .run(workspaces.threads(), [&](int64_t pair, int64_t g, int64_t i0, int64_t i1, int64_t Sq, int64_t Sk, int64_t,
                                       int64_t, auto q, auto k, auto v, auto out, auto lse) {
          Carver carver(workspaces.of_this_thread());
          const AmxWorkspace w = AmxWorkspace::carve(carver, n, D, Dv);
          const auto tiles = [&](int64_t j0, int64_t jn, int64_t jn_pad) {
            if (pack_once) return packed.tile(pair, j0);
            const int64_t D_pad = round_up(D, 32), Dv_pad = round_up(Dv, 32);
            pack_k(k, j0, jn, jn_pad, D, D_pad / 32, w.k);
            pack_v(v, j0, jn, jn_pad, Dv, Dv_pad, w.v);
            return std::pair<const uint16_t*, const uint16_t*>(w.k, w.v);
          };
          attend_tile_amx(g, i0, i1, Sq, Sk, D, Dv, mask, q, v, tiles, out, lse, w);
        });
  }
  return XHAL_OK;
#else
  (void)c, (void)seqs, (void)batched;
  return XHAL_ERR_INTERNAL;
#endif
}

}  // namespace xhal::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace xhal::cpu {

HWY_EXPORT(attention_amx);

namespace {
const char* amx_supports(void*, const xhal_op_call*) {
  if (!amx_bf16_kernels_usable()) {
    return "needs AMX-BF16 and AVX512_BF16 (not on this CPU, named by XHAL_CPU_DISABLE, or the tile state refused)";
  }
  return nullptr;
}

xhal_status run_amx(const xhal_op_call* c, const std::vector<SequenceSpan>& seqs, char* msg, size_t len) {
  const char* op = forward_op_name(c);
  switch (const xhal_status s = HWY_DYNAMIC_DISPATCH(attention_amx)(c, seqs, c->op == XHAL_OP_ATTENTION)) {
    case XHAL_OK: return XHAL_OK;
    case XHAL_ERR_OUT_OF_MEMORY: return workspaces_refused(msg, len, op);
    default: return kernel_error(msg, len, s, "%s: the AMX kernel was dispatched to a target without AVX-512", op);
  }
}

template <class E>
struct AttentionAmx {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    std::vector<SequenceSpan> seqs;
    if (const xhal_status s = forward_spans(c, msg, len, &seqs); s != XHAL_OK) return s;
    return run_amx(c, seqs, msg, len);
  }
};
}  // namespace

XHAL_REGISTER_KERNELS(host) {
  const kernels::KernelTraits on_amx{kFeatureFastPriority, false, amx_supports};
  kernels::register_for<AttentionAmx, BF16>(host, "cpu.attention_amx", XHAL_OP_ATTENTION, accuracy_for, on_amx);
  kernels::register_for<AttentionAmx, BF16>(host, "cpu.attention_varlen_amx", XHAL_OP_ATTENTION_VARLEN, accuracy_for,
                                            on_amx);
  kernels::register_for<AttentionAmx, BF16>(host, "cpu.paged_prefill_amx", XHAL_OP_PAGED_PREFILL, accuracy_for, on_amx);
}

}  // namespace xhal::cpu
#endif

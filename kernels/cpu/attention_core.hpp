// The blocked, online-softmax attention core shared by attention, attention_varlen and
// paged_attention on the CPU. One call computes query rows [i0, i1) of every query head that shares
// one kv head (GQA: each K/V tile is converted to f32 once for the whole group). Memory is bounded
// by the tile sizes, never by the sequence length.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "element.hpp"
#include "scratch.hpp"
#include "xhal/plugin.h"

namespace xhal::cpu {

inline constexpr int64_t kQueryTile = 32;
inline constexpr int64_t kKeyTile = 64;

struct MaskParams {
  float scale;
  bool causal;
  int64_t window_left, window_right;
  float softcap;

  static MaskParams from(const void* params) {  // an op call's xhal_attention_op_params
    const auto& p = *static_cast<const xhal_attention_op_params*>(params);
    return {p.scale, p.causal != 0, p.window_left, p.window_right, p.softcap};
  }
  // Keys [lo, hi) that query i may see, bottom-right aligned (offset = Sk - Sq).
  void visible_range(int64_t i, int64_t Sq, int64_t Sk, int64_t* lo, int64_t* hi) const {
    const int64_t diag = i + Sk - Sq;
    *lo = window_left >= 0 ? std::max<int64_t>(0, diag - window_left) : 0;
    int64_t h = Sk;
    if (causal) h = std::min(h, diag + 1);
    if (window_right >= 0) h = std::min(h, diag + window_right + 1);
    *hi = std::max(*lo, h);
  }
  // Keys [lo, hi) that any of the queries [i0, i1) may see (lo >= hi: none).
  void visible_range_of_rows(int64_t i0, int64_t i1, int64_t Sq, int64_t Sk, int64_t* lo, int64_t* hi) const {
    *lo = Sk, *hi = 0;
    for (int64_t i = i0; i < i1; ++i) {
      int64_t a, b;
      visible_range(i, Sq, Sk, &a, &b);
      if (a < b) *lo = std::min(*lo, a), *hi = std::max(*hi, b);
    }
  }
};

// The core's buffers for n = group * rows query rows and tiles of `keys` keys, carved from one
// workspace (scratch.hpp): f32 queries and accumulators, running max and sum per row, a tile of K
// and V in f32 and its scores.
struct CoreBuffers {
  float *q, *acc, *m, *l, *k, *v, *s;
  int64_t keys;
  static CoreBuffers carve(Carver& c, int64_t n, int64_t keys, int64_t D, int64_t Dv) {
    return {c.take<float>(n, D),    c.take<float>(n, Dv),    c.take<float>(n),    c.take<float>(n),
            c.take<float>(keys, D), c.take<float>(keys, Dv), c.take<float>(keys), keys};
  }
  // Bytes of a workspace for up to n rows and key tiles of min(kKeyTile, max_keys) keys (-1 when
  // that overflows); carve it with keys_for(max_keys).
  static int64_t bytes(int64_t n, int64_t max_keys, int64_t D, int64_t Dv) {
    Carver c;
    carve(c, n, keys_for(max_keys), D, Dv);
    return c.bytes();
  }
  static int64_t keys_for(int64_t max_keys) { return std::clamp<int64_t>(max_keys, 1, kKeyTile); }
};

// Accessors of one (sequence, kv head) problem: Sq query rows per head, Sk keys.
//   q(g, i) -> const Storage*   (query head g of the group, row i)
//   k(j), v(j) -> const Storage*
//   out(g, i) -> Storage*
//   lse(g, i) -> float* or nullptr
// `w` holds at least group * (i1 - i0) rows.
template <class E, class Q, class K, class V, class O, class L>
void attend_group(int64_t group, int64_t i0, int64_t i1, int64_t Sq, int64_t Sk, int64_t D, int64_t Dv,
                  const MaskParams& mask, Q q, K k, V v, O out, L lse, const CoreBuffers& w) {
  const int64_t rows = i1 - i0;
  const int64_t n = group * rows;  // row r = g * rows + (i - i0)
  std::fill(w.acc, w.acc + n * Dv, 0.0f);
  std::fill(w.m, w.m + n, -std::numeric_limits<float>::infinity());
  std::fill(w.l, w.l + n, 0.0f);
  for (int64_t g = 0; g < group; ++g) {
    for (int64_t i = i0; i < i1; ++i) load_row<E>(q(g, i), w.q + (((g * rows) + i - i0) * D), D);
  }
  int64_t lo_all, hi_all;
  mask.visible_range_of_rows(i0, i1, Sq, Sk, &lo_all, &hi_all);
  for (int64_t j0 = lo_all; j0 < hi_all; j0 += w.keys) {
    const int64_t jn = std::min(w.keys, hi_all - j0);
    for (int64_t j = 0; j < jn; ++j) {
      load_row<E>(k(j0 + j), w.k + j * D, D);
      load_row<E>(v(j0 + j), w.v + j * Dv, Dv);
    }
    for (int64_t i = i0; i < i1; ++i) {
      int64_t lo, hi;
      mask.visible_range(i, Sq, Sk, &lo, &hi);
      const int64_t a = std::max(lo, j0) - j0, b = std::min(hi, j0 + jn) - j0;
      if (a >= b) continue;
      for (int64_t g = 0; g < group; ++g) {
        const int64_t r = g * rows + i - i0;
        const float* qr = w.q + r * D;
        float tile_max = -std::numeric_limits<float>::infinity();
        for (int64_t j = a; j < b; ++j) {
          const float* kr = w.k + j * D;
          float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
          for (int64_t d = 0; d < D; ++d) dot += qr[d] * kr[d];
          float score = dot * mask.scale;
          if (mask.softcap > 0.0f) score = mask.softcap * std::tanh(score / mask.softcap);
          w.s[j] = score;
          tile_max = std::max(tile_max, score);
        }
        // A NaN score is passed over by the max but makes its p, and so the row's sum, NaN.
        const float m_new = std::max(w.m[r], tile_max);
        const float correction = std::exp(w.m[r] - m_new);  // 0 on the first tile
        float* ar = w.acc + r * Dv;
        if (correction != 1.0f) {
          for (int64_t d = 0; d < Dv; ++d) ar[d] *= correction;
        }
        float sum = 0.0f;
        for (int64_t j = a; j < b; ++j) {
          const float p = std::exp(w.s[j] - m_new);
          sum += p;
          const float* vr = w.v + j * Dv;
#pragma omp simd
          for (int64_t d = 0; d < Dv; ++d) ar[d] += p * vr[d];
        }
        w.l[r] = w.l[r] * correction + sum;
        w.m[r] = m_new;
      }
    }
  }
  for (int64_t g = 0; g < group; ++g) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t r = g * rows + i - i0;
      const bool empty = w.l[r] == 0.0f;  // no visible key: write 0 and lse = -inf (NaN stays NaN)
      const float inv = empty ? 0.0f : 1.0f / w.l[r];
      float* ar = w.acc + r * Dv;
      for (int64_t d = 0; d < Dv; ++d) ar[d] *= inv;
      store_row<E>(ar, out(g, i), Dv);
      if (float* lp = lse(g, i)) {
        *lp = empty ? -std::numeric_limits<float>::infinity() : w.m[r] + std::log(w.l[r]);
      }
    }
  }
}

}  // namespace xhal::cpu

// The blocked, online-softmax attention core shared by attention, attention_varlen and
// paged_attention on the CPU. One call computes query rows [i0, i1) of every query head that shares
// one kv head (GQA: each K/V tile is converted to f32 once for the whole group). Memory is bounded
// by the tile sizes, never by the sequence length.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "element.hpp"
#include "xhal/plugin.h"

namespace xhal::cpu {

inline constexpr int64_t kQueryTile = 32;
inline constexpr int64_t kKeyTile = 64;

struct MaskParams {
  float scale;
  bool causal;
  int64_t window_left, window_right;
  float softcap;

  static MaskParams from(const xhal_op_params& p) {
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

// Accessors of one (sequence, kv head) problem: Sq query rows per head, Sk keys.
//   q(g, i) -> const Storage*   (query head g of the group, row i)
//   k(j), v(j) -> const Storage*
//   out(g, i) -> Storage*
//   lse(g, i) -> float* or nullptr
template <class E, class Q, class K, class V, class O, class L>
void attend_group(int64_t group, int64_t i0, int64_t i1, int64_t Sq, int64_t Sk, int64_t D,
                  int64_t Dv, const MaskParams& mask, Q q, K k, V v, O out, L lse) {
  const int64_t rows = i1 - i0;
  const int64_t n = group * rows;  // row r = g * rows + (i - i0)
  thread_local std::vector<float> qf, acc, m, l, kf, vf, s;
  qf.assign(size_t(n * D), 0.0f);
  acc.assign(size_t(n * Dv), 0.0f);
  m.assign(size_t(n), -std::numeric_limits<float>::infinity());
  l.assign(size_t(n), 0.0f);
  kf.resize(size_t(kKeyTile * D));
  vf.resize(size_t(kKeyTile * Dv));
  s.resize(size_t(kKeyTile));
  for (int64_t g = 0; g < group; ++g) {
    for (int64_t i = i0; i < i1; ++i) load_row<E>(q(g, i), qf.data() + (((g * rows) + i - i0) * D), D);
  }
  int64_t lo_all, hi_all;
  mask.visible_range_of_rows(i0, i1, Sq, Sk, &lo_all, &hi_all);
  for (int64_t j0 = lo_all; j0 < hi_all; j0 += kKeyTile) {
    const int64_t jn = std::min(kKeyTile, hi_all - j0);
    for (int64_t j = 0; j < jn; ++j) {
      load_row<E>(k(j0 + j), kf.data() + j * D, D);
      load_row<E>(v(j0 + j), vf.data() + j * Dv, Dv);
    }
    for (int64_t i = i0; i < i1; ++i) {
      int64_t lo, hi;
      mask.visible_range(i, Sq, Sk, &lo, &hi);
      const int64_t a = std::max(lo, j0) - j0, b = std::min(hi, j0 + jn) - j0;
      if (a >= b) continue;
      for (int64_t g = 0; g < group; ++g) {
        const int64_t r = g * rows + i - i0;
        const float* qr = qf.data() + r * D;
        float tile_max = -std::numeric_limits<float>::infinity();
        for (int64_t j = a; j < b; ++j) {
          const float* kr = kf.data() + j * D;
          float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
          for (int64_t d = 0; d < D; ++d) dot += qr[d] * kr[d];
          float score = dot * mask.scale;
          if (mask.softcap > 0.0f) score = mask.softcap * std::tanh(score / mask.softcap);
          s[size_t(j)] = score;
          tile_max = std::max(tile_max, score);
        }
        const float m_new = std::max(m[size_t(r)], tile_max);
        const float correction = std::exp(m[size_t(r)] - m_new);  // 0 on the first tile
        float* ar = acc.data() + r * Dv;
        if (correction != 1.0f) {
          for (int64_t d = 0; d < Dv; ++d) ar[d] *= correction;
        }
        float sum = 0.0f;
        for (int64_t j = a; j < b; ++j) {
          const float p = std::exp(s[size_t(j)] - m_new);
          sum += p;
          const float* vr = vf.data() + j * Dv;
#pragma omp simd
          for (int64_t d = 0; d < Dv; ++d) ar[d] += p * vr[d];
        }
        l[size_t(r)] = l[size_t(r)] * correction + sum;
        m[size_t(r)] = m_new;
      }
    }
  }
  for (int64_t g = 0; g < group; ++g) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t r = g * rows + i - i0;
      const bool empty = l[size_t(r)] == 0.0f;  // no visible key: write 0 and lse = -inf
      const float inv = empty ? 0.0f : 1.0f / l[size_t(r)];
      float* ar = acc.data() + r * Dv;
      for (int64_t d = 0; d < Dv; ++d) ar[d] *= inv;
      store_row<E>(ar, out(g, i), Dv);
      if (float* lp = lse(g, i)) {
        *lp = empty ? -std::numeric_limits<float>::infinity() : m[size_t(r)] + std::log(l[size_t(r)]);
      }
    }
  }
}

}  // namespace xhal::cpu

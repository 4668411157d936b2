// paged_attention (decode) on the CPU with SIMD (Highway, best target picked at run time). Decode
// is memory-bound: each cached K/V row must be read once and used for every query head that
// shares its kv head, with as little work per byte as possible. Tasks are (sequence, split of the
// keys), split so that every thread has several tasks even for one sequence; each walks its keys
// in tiles of kTile: the tile's K and V rows of all kv heads converted to f32 slot by slot (memory
// in order), then per kv head scores four query heads x four keys at a time with the sums in
// registers (queries pre-scaled into base 2), the online softmax in vectors, and P V with four
// heads' output vectors in registers while V streams by. Splits are merged by their log-sum-exp. Registered above the reference kernel of
// paged_attention.cpp.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/paged_attention_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/attention_core.hpp"
#include "kernels/cpu/paged_attention_checks.hpp"
#include "kernels/cpu/simd_element-inl.h"
#include "kernels/cpu/simd_math-inl.h"
#include "kernels/cpu/tensor_ref.hpp"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {

constexpr int64_t kTile = 32;           // keys scored at a time (a multiple of 4)
constexpr int64_t kMinSplitKeys = 512;  // keys per split at least
constexpr float kLog2e = 1.44269504088896341f;

// What one split leaves for the merge, views into one buffer: per query head of the group, the
// running max (base 2), sum and unnormalised output row.
struct Partial {
  float *m, *l, *acc;
  static int64_t floats(int64_t group, int64_t Dv) { return group * (2 + Dv); }
  static Partial at(float* base, int64_t group) { return {base, base + group, base + 2 * group}; }
};

// Buffers that keep their memory from call to call: allocations of this size would be mapped and
// zeroed by the kernel on every call.
std::vector<float>& scratch(int which) {
  thread_local std::vector<float> buffers[5];
  return buffers[which];
}

// Scores of kTile keys (rows k[0..kTile) of E, past the last key zero rows) against the query
// rows qf[0..rows4) (f32, pre-scaled, a multiple of 4 rows, padded with zeros):
// s[g * kTile + j]. Four query rows against four keys at a time, sixteen sums in registers, one
// horizontal sum per score.
template <class E>
void score_tile(const float* qf, int64_t rows4, const typename E::Storage* const* k, int64_t D, float* s) {
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df));
  for (int64_t g0 = 0; g0 < rows4; g0 += 4) {
    for (int64_t j0 = 0; j0 < kTile; j0 += 4) {
      VF acc[4][4];
      for (auto& row : acc)
        for (auto& a : row) a = hn::Zero(df);
      int64_t d = 0;
      for (; d + lanes <= D; d += lanes) {
        VF kv[4];
        for (int kk = 0; kk < 4; ++kk) kv[kk] = load_f32<E>(k[j0 + kk] + d);
        for (int gg = 0; gg < 4; ++gg) {
          const VF qv = hn::LoadU(df, qf + (g0 + gg) * D + d);
          for (int kk = 0; kk < 4; ++kk) acc[gg][kk] = hn::MulAdd(qv, kv[kk], acc[gg][kk]);
        }
      }
      for (int gg = 0; gg < 4; ++gg) {
        for (int kk = 0; kk < 4; ++kk) {
          float sum = hn::GetLane(hn::SumOfLanes(df, acc[gg][kk]));
          for (int64_t dd = d; dd < D; ++dd) sum += qf[(g0 + gg) * D + dd] * E::load(k[j0 + kk][dd]);
          s[(g0 + gg) * kTile + j0 + kk] = sum;
        }
      }
    }
  }
}

// acc[g * Dv + d] += sum over j < keys of p[g * kTile + j] * v[j][d], for the rows4 query rows:
// a vector of V loaded once per key and used for four rows whose sums stay in registers.
template <class E>
void accumulate_tile(float* acc, int64_t rows4, const float* p, const typename E::Storage* const* v, int64_t keys,
                     int64_t Dv) {
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df));
  int64_t d = 0;
  for (; d + lanes <= Dv; d += lanes) {
    for (int64_t g0 = 0; g0 < rows4; g0 += 4) {
      VF a[4];
      for (int gg = 0; gg < 4; ++gg) a[gg] = hn::LoadU(df, acc + (g0 + gg) * Dv + d);
      for (int64_t j = 0; j < keys; ++j) {
        const VF vv = load_f32<E>(v[j] + d);
        for (int gg = 0; gg < 4; ++gg) a[gg] = hn::MulAdd(hn::Set(df, p[(g0 + gg) * kTile + j]), vv, a[gg]);
      }
      for (int gg = 0; gg < 4; ++gg) hn::StoreU(a[gg], df, acc + (g0 + gg) * Dv + d);
    }
  }
  for (; d < Dv; ++d) {
    for (int64_t g = 0; g < rows4; ++g) {
      for (int64_t j = 0; j < keys; ++j) acc[g * Dv + d] += p[g * kTile + j] * E::load(v[j][d]);
    }
  }
}

// Scores s[0..keys) (base 2) -> p = 2^(s - m_new); updates the running max and sum and rescales
// the accumulator row when the max moved. softcap: s is cap·tanh(s / cap) in natural units first.
void softmax_tile(float* s, int64_t keys, float softcap, float* m, float* l, float* acc, int64_t Dv) {
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df));
  if (softcap > 0.0f) {
    for (int64_t j = 0; j < keys; ++j) s[j] = softcap * std::tanh(s[j] / softcap) * kLog2e;
  }
  float tile_max = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < keys; ++j) tile_max = std::max(tile_max, s[j]);
  const float m_new = std::max(*m, tile_max);
  const float correction = std::exp2(*m - m_new);
  const auto mv = hn::Set(df, m_new), floor = hn::Set(df, -126.0f);
  auto vsum = hn::Zero(df);
  int64_t j = 0;
  for (; j + lanes <= keys; j += lanes) {
    const auto p = exp2_on_range<6>(hn::Max(hn::Sub(hn::LoadU(df, s + j), mv), floor));
    hn::StoreU(p, df, s + j);
    vsum = hn::Add(vsum, p);
  }
  float sum = hn::GetLane(hn::SumOfLanes(df, vsum));
  for (; j < keys; ++j) sum += (s[j] = std::exp2(s[j] - m_new));
  *l = *l * correction + sum;
  *m = m_new;
  if (correction != 1.0f) {
    for (int64_t d = 0; d < Dv; ++d) acc[d] *= correction;
  }
}

template <class E>
void paged_decode_typed(const xhal_op_call* c) {
  using S = typename E::Storage;
  const TensorRef<const S> q(c->t[XHAL_SLOT_Q]), kc(c->t[XHAL_SLOT_K]), vc(c->t[XHAL_SLOT_V]);
  const TensorRef<S> out(c->t[XHAL_SLOT_OUT]);
  const TensorRef<const int32_t> table(c->t[XHAL_SLOT_BLOCK_TABLE]), lens(c->t[XHAL_SLOT_SEQ_LENS]);
  const int64_t B = q.size(0), Hq = q.size(1), D = q.size(2), Dv = vc.size(3);
  const int64_t block_size = kc.size(1), Hkv = kc.size(2), group = Hq / Hkv;
  const MaskParams mask = MaskParams::from(c->params);
  // Splits: enough tasks for every thread several times over, each of kMinSplitKeys keys or more.
  const int64_t max_len = table.size(1) * block_size;
  const int64_t want = (4 * omp_get_max_threads() + B - 1) / B;
  const int64_t splits = std::clamp<int64_t>(want, 1, std::max<int64_t>(1, max_len / kMinSplitKeys));
  // Query rows per kv head rounded up to a multiple of 4 (score_tile's blocks), the extra rows
  // zeros whose results are dropped.
  const int64_t rows4 = (group + 3) / 4 * 4;
  const int64_t partial_floats = Partial::floats(rows4, Dv);
  std::vector<float>& partials = scratch(0);  // the calling thread's; the workers' are their own
  partials.resize(size_t(B * Hkv * splits * partial_floats));
  auto partial = [&](int64_t b, int64_t h, int64_t split) {
    return Partial::at(&partials[size_t(((b * Hkv + h) * splits + split) * partial_floats)], rows4);
  };
  const float q_scale = mask.softcap > 0.0f ? mask.scale : mask.scale * kLog2e;
#pragma omp parallel
  {
    std::vector<float>& qf = scratch(1);  // [kv head][row of rows4][dim]
    std::vector<float>& s = scratch(2);   // [row][key of the tile]
    qf.assign(size_t(Hkv * rows4 * D), 0.0f);
    s.resize(size_t(rows4 * kTile));
    std::vector<float>& kf = scratch(3);  // [kv head][key of the tile][dim]
    std::vector<float>& vf = scratch(4);
    kf.resize(size_t(Hkv * kTile * D)), vf.resize(size_t(Hkv * kTile * Dv));
    std::vector<const float*> krows(static_cast<size_t>(kTile)), vrows(static_cast<size_t>(kTile));
#pragma omp for collapse(2) schedule(dynamic)
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t split = 0; split < splits; ++split) {
        int64_t lo, hi;  // the decode token is the last of the sequence's L
        mask.visible_range(0, 1, *lens.at(b), &lo, &hi);
        const int64_t per_split = (hi - lo + splits - 1) / splits;
        const int64_t k0 = lo + split * per_split, k1 = std::min(hi, k0 + per_split);
        for (int64_t h = 0; h < Hkv; ++h) {
          const Partial part = partial(b, h, split);
          std::fill(part.m, part.m + rows4, -std::numeric_limits<float>::infinity());
          std::fill(part.l, part.l + rows4, 0.0f);
          std::fill(part.acc, part.acc + rows4 * Dv, 0.0f);
        }
        if (k0 >= k1) continue;
        for (int64_t hq = 0; hq < Hq; ++hq) {
          const S* qr = q.at(b, hq, 0);
          float* row = &qf[size_t(((hq / group) * rows4 + hq % group) * D)];
          for (int64_t d = 0; d < D; ++d) row[d] = E::load(qr[d]) * q_scale;
        }
        for (int64_t j0 = k0; j0 < k1; j0 += kTile) {
          const int64_t keys = std::min(kTile, k1 - j0);
          // The tile's K and V rows of every kv head, converted to f32 slot by slot: a slot's heads
          // are adjacent in the cache ([block, slot, kv head, dim]), so memory is read in order
          // (head by head it would be a strided part of every slot, which the hardware prefetchers
          // do not follow). Keys past the end are zero rows.
          for (int64_t j = 0; j < kTile; ++j) {
            const int64_t block = j < keys ? *table.at(b, (j0 + j) / block_size) : 0;
            const int64_t slot = (j0 + j) % block_size;
            for (int64_t h = 0; h < Hkv; ++h) {
              float* kd = &kf[size_t((h * kTile + j) * D)];
              float* vd = &vf[size_t((h * kTile + j) * Dv)];
              if (j < keys) {
                convert_row<E>(kc.at(block, slot, h, 0), kd, D);
                convert_row<E>(vc.at(block, slot, h, 0), vd, Dv);
              } else {
                std::fill(kd, kd + D, 0.0f), std::fill(vd, vd + Dv, 0.0f);
              }
            }
          }
          for (int64_t h = 0; h < Hkv; ++h) {
            for (int64_t j = 0; j < kTile; ++j) {
              krows[size_t(j)] = &kf[size_t((h * kTile + j) * D)], vrows[size_t(j)] = &vf[size_t((h * kTile + j) * Dv)];
            }
            const Partial part = partial(b, h, split);
            score_tile<F32>(&qf[size_t(h * rows4 * D)], rows4, krows.data(), D, s.data());
            for (int64_t g = 0; g < group; ++g) {
              softmax_tile(&s[size_t(g * kTile)], keys, mask.softcap, part.m + g, part.l + g, part.acc + g * Dv, Dv);
            }
            for (int64_t g = group; g < rows4; ++g) std::fill(&s[size_t(g * kTile)], &s[size_t(g * kTile + keys)], 0.0f);
            accumulate_tile<F32>(part.acc, rows4, s.data(), vrows.data(), keys, Dv);
          }
        }
      }
    }
  }
  // Merge the splits of each (sequence, query head): weights 2^(m_s - M), M the largest max.
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t hq = 0; hq < Hq; ++hq) {
      const int64_t h = hq / group, g = hq % group;
      float M = -std::numeric_limits<float>::infinity();
      for (int64_t sp = 0; sp < splits; ++sp) M = std::max(M, partial(b, h, sp).m[g]);
      std::vector<float>& row = scratch(1);
      row.assign(size_t(Dv), 0.0f);
      float L = 0.0f;
      for (int64_t sp = 0; sp < splits; ++sp) {
        const Partial part = partial(b, h, sp);
        if (part.l[g] == 0.0f) continue;  // no visible key in this split
        const float weight = std::exp2(part.m[g] - M);
        L += part.l[g] * weight;
        for (int64_t d = 0; d < Dv; ++d) row[size_t(d)] += weight * part.acc[g * Dv + d];
      }
      const float inv = L > 0.0f ? 1.0f / L : 0.0f;  // no visible key: 0
      S* o = out.at(b, hq, 0);
      for (int64_t d = 0; d < Dv; ++d) o[d] = E::store(row[size_t(d)] * inv);
    }
  }
}

void paged_decode(const xhal_op_call* c) {
  with_element(c->dtype, [&]<class E>() { paged_decode_typed<E>(c); });
}

}  // namespace xhal::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace xhal::cpu {

HWY_EXPORT(paged_decode);

namespace {
template <class E>
struct PagedAttentionSimd {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    if (const xhal_status s = check_paged_tables(c, msg, len); s != XHAL_OK) return s;
    if (c->t[XHAL_SLOT_Q]->shape[0] * c->t[XHAL_SLOT_Q]->shape[1] == 0) return XHAL_OK;
    HWY_DYNAMIC_DISPATCH(paged_decode)(c);
    return XHAL_OK;
  }
};
}  // namespace

void register_paged_attention_simd_kernels(const xhal_host_api* host) {
  register_fast_kernels<PagedAttentionSimd>(host, "cpu.paged_attention_simd", XHAL_OP_PAGED_ATTENTION);
}

}  // namespace xhal::cpu
#endif

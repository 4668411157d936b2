// paged_attention (decode) on the CPU with SIMD (Highway, best target picked at run time). Decode
// is memory-bound: each cached K/V row must be read once, straight from the cache, and used for
// every query head that shares its kv head, with as little work per byte as possible. Tasks are
// (sequence, split of the keys), small enough that every thread has many even for one sequence (one
// short sequence: a share for every thread, down to a tile each), claimed from a shared counter; a
// thread claims its next task during the last tile of the current one, so that task's first tile is
// prefetched like any other. Each walks its keys in tiles of kTile. Per tile, slot by slot (memory
// in order: a slot's heads are adjacent in the cache), every kv head's scores come out kSumBlock at
// a time (R query heads x kSumBlock / R keys, the sums in registers, reduced together) while the
// next tile's K rows are prefetched; then per kv head the online softmax and P V, R heads' output
// vectors in registers while V streams by and the next tile's V rows of that head are prefetched,
// so that requests go out through the whole tile. The scores of bf16 on
// CPUs with AVX512_BF16 are multiplied as stored (vdpbf16ps); every other product widens K or V in
// registers, in load2_f32's order. Splits are merged by their log-sum-exp. Registered above the
// reference kernel of paged_attention.cpp.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/paged_attention_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/attention_core.hpp"
#include "kernels/cpu/paged_attention_checks.hpp"
#include "kernels/cpu/region_errors.hpp"
#include "kernels/cpu/scratch.hpp"
#include "kernels/cpu/simd_dot-inl.h"
#include "kernels/cpu/simd_element-inl.h"
#include "kernels/cpu/simd_math-inl.h"
#include "kernels/cpu/tensor_ref.hpp"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {

constexpr int64_t kTile = 32;  // keys per tile
static_assert(kTile % kSumBlock == 0, "a tile's keys are scored in whole blocks");
constexpr int64_t kMinSplitKeys = 256;  // keys per split at least
constexpr int64_t kTasksPerThread = 16;  // small tasks: the threads' last ones end close together
constexpr float kLog2e = 1.44269504088896341f;

// What one split leaves for the merge, views into one buffer: per query row of the group, the
// running max (base 2), sum and unnormalised output row (vector chunks in load2_f32's order).
struct Partial {
  float *m, *l, *acc;
  static int64_t floats(int64_t rows, int64_t Dv) { return rows * (2 + Dv); }
  static Partial at(float* base, int64_t rows) { return {base, base + rows, base + 2 * rows}; }
};

// Brings a line, or a row of `bytes`, into L2 ahead of its use. Not into L1: a tile's K and V rows
// for all kv heads (128 KiB at D = 128, 8 kv heads) outgrow any L1, so L1 prefetches evicted each
// other and the tile in use (12% slower on the Xeon; the same on Zen 3, docs/journal/kernel-notes.md).
HWY_INLINE void prefetch_line(const void* p) {
  constexpr int kReadOnly = 0, kKeepInL2 = 2;  // __builtin_prefetch's locality 2: prefetcht1 on x86
  __builtin_prefetch(p, kReadOnly, kKeepInL2);
}
HWY_INLINE void prefetch_row(const void* p, int64_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (int64_t off = 0; off < bytes; off += 64) prefetch_line(c + off);
}

// acc[r * Dv + d] += sum over j < keys of p[r * kTile + j] * v[j][d] for R rows: the rows' vectors
// of one chunk of 2 * lanes in registers while the keys' V rows stream by, widened to f32 in
// load2_f32's order; the rest of Dv in place. On AVX512_BF16, vdpbf16ps here (P rounded to bf16)
// was slower than widening, and four vectors per row slower than two (docs/journal/kernel-notes.md).
// next_v (null, or rows to bring into L2 meanwhile, as many as keys): each line at the offset the
// loop has reached, so that the requests go out a few at a time through the whole P V. With all of
// a tile's prefetches issued during the scores, a prefetch instruction waits once the core's miss
// buffers are full, holding the scores up, and P V then runs with no request out: spread over both
// phases, bf16 decode ran 4-16% faster on 2-core VMs (Zen 3, Xeon; docs/journal/kernel-notes.md).
template <class E, int R>
void accumulate_tile(float* acc, const float* p, const typename E::Storage* const* v, int64_t keys, int64_t Dv,
                     const typename E::Storage* const* next_v) {
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df)), full = Dv / (2 * lanes) * (2 * lanes);
  // Bytes of each next row prefetched by a chunk that starts a line: the lines the chunk spans (two
  // for f32 with AVX-512, else one).
  const int64_t prefetch_bytes = std::max<int64_t>(64, 2 * lanes * int64_t(sizeof(typename E::Storage)));
  for (int64_t d = 0; d < full; d += 2 * lanes) {
    VF a[R], b[R];
    for (int r = 0; r < R; ++r) a[r] = hn::LoadU(df, acc + r * Dv + d), b[r] = hn::LoadU(df, acc + r * Dv + d + lanes);
    const bool line_start = next_v != nullptr && (d * int64_t(sizeof(typename E::Storage))) % 64 == 0;
    for (int64_t j = 0; j < keys; ++j) {
      if (line_start) prefetch_row(next_v[j] + d, prefetch_bytes);
      VF va, vb;
      load2_f32<E>(v[j] + d, va, vb);
      for (int r = 0; r < R; ++r) {
        const VF pr = hn::Set(df, p[r * kTile + j]);
        a[r] = hn::MulAdd(pr, va, a[r]), b[r] = hn::MulAdd(pr, vb, b[r]);
      }
    }
    for (int r = 0; r < R; ++r) hn::StoreU(a[r], df, acc + r * Dv + d), hn::StoreU(b[r], df, acc + r * Dv + d + lanes);
  }
  for (int64_t d = full; d < Dv; ++d) {
    for (int r = 0; r < R; ++r) {
      for (int64_t j = 0; j < keys; ++j) acc[r * Dv + d] += p[r * kTile + j] * E::load(v[j][d]);
    }
  }
}

// Dot products s[0..keys) -> p = 2^(s' - m_new), s' the scaled score in base 2 (softcap:
// cap·tanh(s·scale / cap) first); updates the running max and sum and rescales the accumulator
// row when the max moved.
void softmax_tile(float* s, int64_t keys, const MaskParams& mask, float* m, float* l, float* acc, int64_t Dv) {
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df)), full = keys / lanes * lanes;
  if (mask.softcap > 0.0f) {
    for (int64_t j = 0; j < keys; ++j) s[j] = mask.softcap * std::tanh(s[j] * mask.scale / mask.softcap) * kLog2e;
  } else {
    const auto scale = hn::Set(df, mask.scale * kLog2e);
    for (int64_t j = 0; j < full; j += lanes) hn::StoreU(hn::Mul(hn::LoadU(df, s + j), scale), df, s + j);
    for (int64_t j = full; j < keys; ++j) s[j] *= mask.scale * kLog2e;
  }
  auto vmax = hn::Set(df, -std::numeric_limits<float>::infinity());
  for (int64_t j = 0; j < full; j += lanes) vmax = hn::Max(vmax, hn::LoadU(df, s + j));
  float tile_max = hn::GetLane(hn::MaxOfLanes(df, vmax));
  for (int64_t j = full; j < keys; ++j) tile_max = std::max(tile_max, s[j]);
  const float m_new = std::max(*m, tile_max);
  const auto mv = hn::Set(df, m_new), floor = hn::Set(df, -126.0f);
  auto vsum = hn::Zero(df);
  for (int64_t j = 0; j < full; j += lanes) {
    // NaN second: x86's max returns it, so a NaN score (a NaN query) stays NaN.
    const auto p = exp2_on_range<5>(hn::Max(floor, hn::Sub(hn::LoadU(df, s + j), mv)));
    hn::StoreU(p, df, s + j);
    vsum = hn::Add(vsum, p);
  }
  float sum = hn::GetLane(hn::SumOfLanes(df, vsum));
  for (int64_t j = full; j < keys; ++j) sum += (s[j] = std::exp2(s[j] - m_new));
  if (m_new != *m) {  // the max moved: rescale what was summed under the old one
    const float correction = std::exp2(*m - m_new);
    const auto cv = hn::Set(df, correction);
    int64_t d = 0;
    for (; d + lanes <= Dv; d += lanes) hn::StoreU(hn::Mul(hn::LoadU(df, acc + d), cv), df, acc + d);
    for (; d < Dv; ++d) acc[d] *= correction;
    *l *= correction;
    *m = m_new;
  }
  *l += sum;
}

template <class E, int R>
bool paged_decode_typed(const xhal_op_call* c) {
  using S = typename E::Storage;
  using Q = DotElement<E>;
  constexpr int64_t K = kSumBlock / R;  // keys per score block
  const TensorRef<const S> q(c->tensors[XHAL_PAGED_ATTENTION_Q]), kc(c->tensors[XHAL_PAGED_ATTENTION_K_CACHE]),
      vc(c->tensors[XHAL_PAGED_ATTENTION_V_CACHE]);
  const TensorRef<S> out(c->tensors[XHAL_PAGED_ATTENTION_OUT]);
  const TensorRef<const int32_t> table(c->tensors[XHAL_PAGED_ATTENTION_BLOCK_TABLE]),
      lens(c->tensors[XHAL_PAGED_ATTENTION_SEQ_LENS]);
  const int64_t B = q.size(0), Hq = q.size(1), D = q.size(2), Dv = vc.size(3);
  const int64_t block_size = kc.size(1), Hkv = kc.size(2), group = Hq / Hkv;
  const MaskParams mask = MaskParams::from(c->params);
  // Splits: kTasksPerThread tasks for every thread, each of kMinSplitKeys keys or more; down to a
  // tile each where longer ones would leave threads without a task (one short sequence).
  const int64_t max_len = table.size(1) * block_size, threads = omp_get_max_threads();
  const int64_t want = (kTasksPerThread * threads + B - 1) / B;
  const int64_t one_each = std::min((threads + B - 1) / B, max_len / kTile);
  const int64_t splits = std::clamp<int64_t>(want, 1, std::max({int64_t{1}, max_len / kMinSplitKeys, one_each}));
  // Query rows per kv head rounded up to a multiple of R, the extra rows zeros whose results are
  // dropped.
  const int64_t rows = (group + R - 1) / R * R;
  const int64_t partial_floats = Partial::floats(rows, Dv);
  // From the core's allocator, whose cache keeps them from call to call (fresh pages would be mapped
  // and zeroed by the OS on every call): the splits' partial results, and each thread's queries
  // [kv head][row][dim] and scores [kv head][row][key of the tile] (its merged row, later).
  Carver partials_size;
  partials_size.take<float>(B * Hkv * splits, partial_floats);
  const Scratch partials(c, partials_size.bytes());
  const auto thread_buffers = [&](Carver& carver) {
    return std::pair{carver.take<Q>(Hkv * rows, D), carver.take<float>(Hkv * rows, std::max(kTile, Dv))};
  };
  Carver thread_size;
  thread_buffers(thread_size);
  const ThreadWorkspaces workspaces(c, thread_size.bytes(), B * splits);
  if (partials.data() == nullptr || !workspaces.ok()) return false;
  auto partial = [&](int64_t b, int64_t h, int64_t split) {
    return Partial::at(partials.get() + (((b * Hkv + h) * splits + split) * partial_floats), rows);
  };
  const int64_t k_row_bytes = D * int64_t(sizeof(S));
  const int64_t tasks = B * splits;
  std::atomic<int64_t> next_task{0};  // tasks (sequence, split), claimed one by one
  // The keys of task t: [k0, k1); the decode token is the last of the sequence's L.
  auto task_keys = [&](int64_t t, int64_t* k0, int64_t* k1) {
    int64_t lo, hi;
    mask.visible_range(0, 1, *lens.at(t / splits), &lo, &hi);
    const int64_t per_split = (hi - lo + splits - 1) / splits;
    *k0 = lo + (t % splits) * per_split, *k1 = std::min(hi, *k0 + per_split);
  };
  RegionErrors errors;
#pragma omp parallel num_threads(workspaces.threads())
  errors.capture([&] {
    Carver carver(workspaces.of_this_thread());
    const auto [qrows, s] = thread_buffers(carver);
    std::fill(qrows, qrows + Hkv * rows * D, Q{});
    // The slots of this tile and the next: key j's K row of kv head h is k_slot[j] + h * stride.
    const S* k_slot[2][kTile];
    const S* v_slot[2][kTile];
    const S* krows[K];
    const S* vrows[kTile];
    const S* next_vrows[kTile];
    alignas(64) float sums[kSumBlock];
    // Slots of the tile of sequence b at j0 (keys up to k1) into set `which`; past the last key,
    // the tile's first slot again (its scores are computed and dropped).
    auto locate = [&](int64_t b, int64_t j0, int64_t k1, int which) {
      const int64_t keys = std::min(kTile, k1 - j0);
      for (int64_t j = 0; j < kTile; ++j) {
        const int64_t key = j0 + (j < keys ? j : 0);
        const int64_t block = *table.at(b, key / block_size), slot = key % block_size;
        k_slot[which][j] = kc.at(block, slot, 0, 0), v_slot[which][j] = vc.at(block, slot, 0, 0);
      }
    };
    // Tasks are claimed one at a time; the next one during the current one's last tile, so that
    // its first tile comes in during that tile's scores like any other.
    int64_t task = next_task.fetch_add(1), claimed = -1;
    int cur = 0;  // the slot set of the tile in hand; the other one takes the next tile
    bool first_ready = false;  // set cur holds this task's first tile already
    // Claims the next task; true when it has keys, its first tile's slots then in set `which`.
    auto claim_ahead = [&](int which) {
      claimed = next_task.fetch_add(1);
      int64_t n0 = 0, n1 = 0;
      if (claimed < tasks) task_keys(claimed, &n0, &n1);
      if (n0 >= n1) return false;
      locate(claimed / splits, n0, n1, which);
      return true;
    };
    while (task < tasks) {
      const int64_t b = task / splits, split = task % splits;
      int64_t k0, k1;
      task_keys(task, &k0, &k1);
      for (int64_t h = 0; h < Hkv; ++h) {
        const Partial part = partial(b, h, split);
        std::fill(part.m, part.m + rows, -std::numeric_limits<float>::infinity());
        std::fill(part.l, part.l + rows, 0.0f);
        std::fill(part.acc, part.acc + rows * Dv, 0.0f);
      }
      claimed = -1;
      if (k0 < k1) {
        for (int64_t hq = 0; hq < Hq; ++hq) {
          prepare_dot_row<E>(q.at(b, hq, 0), D, qrows + (((hq / group) * rows + hq % group) * D));
        }
        if (!first_ready) locate(b, k0, k1, cur);
        for (int64_t j0 = k0; j0 < k1; j0 += kTile, cur = 1 - cur) {
          const int next = 1 - cur;
          const int64_t keys = std::min(kTile, k1 - j0);
          bool has_next = j0 + kTile < k1;
          if (has_next) {
            locate(b, j0 + kTile, k1, next);
          } else {
            has_next = first_ready = claim_ahead(next);
          }
          // Scores, slot by slot; meanwhile the next tile's K and V rows come in.
          for (int64_t j = 0; j < kTile; j += K) {
            for (int64_t h = 0; h < Hkv; ++h) {
              for (int64_t kk = 0; kk < K; ++kk) krows[kk] = k_slot[cur][j + kk] + h * kc.stride(2);
              for (int64_t r0 = 0; r0 < rows; r0 += R) {
                dot_block<E, R>(qrows + ((h * rows + r0) * D), krows, D, sums);
                for (int r = 0; r < R; ++r) {
                  std::copy(sums + r * K, sums + (r + 1) * K, s + ((h * rows + r0 + r) * kTile + j));
                }
              }
              if (has_next) {
                for (int64_t kk = j; kk < j + K; ++kk) prefetch_row(k_slot[next][kk] + h * kc.stride(2), k_row_bytes);
              }
            }
          }
          for (int64_t h = 0; h < Hkv; ++h) {
            const Partial part = partial(b, h, split);
            float* sh = s + (h * rows * kTile);
            for (int64_t g = 0; g < group; ++g) {
              softmax_tile(sh + g * kTile, keys, mask, part.m + g, part.l + g, part.acc + g * Dv, Dv);
            }
            for (int64_t g = group; g < rows; ++g) std::fill(sh + g * kTile, sh + g * kTile + keys, 0.0f);
            for (int64_t j = 0; j < keys; ++j) vrows[j] = v_slot[cur][j] + h * vc.stride(2);
            for (int64_t j = 0; has_next && j < keys; ++j) next_vrows[j] = v_slot[next][j] + h * vc.stride(2);
            for (int64_t r0 = 0; r0 < rows; r0 += R) {
              const S* const* prefetch_v = has_next && r0 == 0 ? next_vrows : nullptr;  // once per kv head
              accumulate_tile<E, R>(part.acc + r0 * Dv, sh + r0 * kTile, vrows, keys, Dv, prefetch_v);
            }
          }
        }
      }
      task = claimed < 0 ? next_task.fetch_add(1) : claimed;
    }
  });
  errors.rethrow();
  // Merge the splits of each (sequence, query head): weights 2^(m_s - M), M the largest max.
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df)), full = Dv / (2 * lanes) * (2 * lanes);
#pragma omp parallel for collapse(2) schedule(static) num_threads(workspaces.threads())
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t hq = 0; hq < Hq; ++hq) {
      const int64_t h = hq / group, g = hq % group;
      float M = -std::numeric_limits<float>::infinity();
      for (int64_t sp = 0; sp < splits; ++sp) M = std::max(M, partial(b, h, sp).m[g]);
      Carver carver(workspaces.of_this_thread());
      float* row = thread_buffers(carver).second;
      std::fill(row, row + Dv, 0.0f);
      float L = 0.0f;
      for (int64_t sp = 0; sp < splits; ++sp) {
        const Partial part = partial(b, h, sp);
        if (part.l[g] == 0.0f) continue;  // no visible key in this split
        const float weight = std::exp2(part.m[g] - M);
        L += part.l[g] * weight;
        for (int64_t d = 0; d < Dv; ++d) row[d] += weight * part.acc[g * Dv + d];
      }
      const float inv = L == 0.0f ? 0.0f : 1.0f / L;  // no visible key: 0; NaN stays NaN
      S* o = out.at(b, hq, 0);
      const auto iv = hn::Set(df, inv);
      int64_t d = 0;
      for (; d < full; d += 2 * lanes) {
        store2_f32<E>(hn::Mul(hn::LoadU(df, &row[d]), iv), hn::Mul(hn::LoadU(df, &row[d + lanes]), iv), o + d);
      }
      for (; d < Dv; ++d) o[d] = E::store(row[d] * inv);
    }
  }
  return true;
}

// R, the query rows per score block, from the GQA group's size. False when the allocator had no
// scratch to give.
bool paged_decode(const xhal_op_call* c) {
  const int64_t group =
      c->tensors[XHAL_PAGED_ATTENTION_Q]->shape[1] / c->tensors[XHAL_PAGED_ATTENTION_K_CACHE]->shape[2];
  bool ok = false;
  with_element(c->dtype,
               [&]<class E>() { with_rows_per_block(group, [&]<int R>() { ok = paged_decode_typed<E, R>(c); }); });
  return ok;
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
    if (c->tensors[XHAL_PAGED_ATTENTION_Q]->shape[0] * c->tensors[XHAL_PAGED_ATTENTION_Q]->shape[1] == 0)
      return XHAL_OK;
    if (HWY_DYNAMIC_DISPATCH(paged_decode)(c)) return XHAL_OK;
    return workspaces_refused(msg, len, "paged_attention");
  }
};
}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_fast_kernels<PagedAttentionSimd>(host, "cpu.paged_attention_simd", XHAL_OP_PAGED_ATTENTION);
}

}  // namespace xhal::cpu
#endif

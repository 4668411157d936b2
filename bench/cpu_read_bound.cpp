// xhal-bench's read_bound cases on the CPU: a loop that reads paged decode's cache with a given
// number of f32 FMAs per vector loaded and nothing else (no widening, no softmax, no reduction).
// At the op's own count of multiply-adds per cached byte it bounds what a paged decode kernel that
// multiplies on the vector units can reach on the machine (docs/journal/kernel-notes.md, seventeenth pass).
// And the least an exact sampler does over its logits: each row's largest value, then its softmax
// denominator (one exponential an element).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/cpu_read_bound.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include <omp.h>

#include <cstdint>

#include "bench/cpu_read_bound.hpp"

HWY_BEFORE_NAMESPACE();
namespace xhal_bench::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr int64_t kPrefetchBlocks = 2;  // how far ahead, in blocks of the thread's own order

// Reads blocks[0..count) of block_bytes each, F multiply-adds per vector loaded (none: one max),
// each line prefetched kPrefetchBlocks blocks ahead when `prefetch`. Returns a value every load
// feeds, so that none is dropped.
template <int F>
float read_blocks_with(const char* const* blocks, int64_t count, int64_t block_bytes, bool prefetch) {
  constexpr int kAccumulators = 8, kGroup = F == 0 ? kAccumulators : kAccumulators / F;  // vectors per step
  float total = 0.0f;
#pragma omp parallel reduction(+ : total)
  {
    const hn::ScalableTag<float> df;
    const hn::RebindToUnsigned<decltype(df)> du;
    const int64_t vector_bytes = int64_t(hn::Lanes(df) * sizeof(float)), step = kGroup * vector_bytes;
    const int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
    const int64_t b0 = count * t / n, b1 = count * (t + 1) / n;
    // Sign and low exponent bits only: 0 or ±2^e with e <= 0, never subnormal, infinite or NaN,
    // whatever the cache holds.
    const auto keep = hn::Set(du, 0x3f000000u);
    const auto m = hn::Set(df, 0.5f);
    decltype(hn::Zero(df)) acc[kAccumulators];
    for (auto& a : acc) a = hn::Zero(df);
    for (int64_t b = b0; b < b1; ++b) {
      const char* p = blocks[b];
      const char* ahead = prefetch && b + kPrefetchBlocks < b1 ? blocks[b + kPrefetchBlocks] : nullptr;
      for (int64_t off = 0; off < block_bytes; off += step) {
        if (ahead != nullptr) {
          // The lines that start in this step (a step may be shorter than a line).
          for (int64_t line = (off + 63) / 64 * 64; line < off + step; line += 64) {
            __builtin_prefetch(ahead + line, 0, 2);
          }
        }
        for (int g = 0; g < kGroup; ++g) {
          const auto bits = hn::LoadU(du, reinterpret_cast<const uint32_t*>(p + off + g * vector_bytes));
          const auto v = hn::BitCast(df, hn::And(bits, keep));
          if constexpr (F == 0) {
            acc[g] = hn::Max(acc[g], v);
          } else {
            for (int f = 0; f < F; ++f) acc[g * F + f] = hn::MulAdd(v, m, acc[g * F + f]);
          }
        }
      }
    }
    for (int a = 1; a < kAccumulators; ++a) acc[0] = hn::Add(acc[0], acc[a]);
    total += hn::GetLane(hn::SumOfLanes(df, acc[0]));
  }
  return total;
}

float read_blocks(const char* const* blocks, int64_t count, int64_t block_bytes, int fmas, bool prefetch) {
  switch (fmas) {
    case 0: return read_blocks_with<0>(blocks, count, block_bytes, prefetch);
    case 2: return read_blocks_with<2>(blocks, count, block_bytes, prefetch);
    case 4: return read_blocks_with<4>(blocks, count, block_bytes, prefetch);
    default: return read_blocks_with<8>(blocks, count, block_bytes, prefetch);
  }
}

// Rows [0, rows) of `cols` values (bf16 bits, else f32), split across the OpenMP threads: each
// row's largest value, then the sum of exp(x - largest) over it. Returns the sum of the sums.
float softmax_denominators(const void* data, int64_t rows, int64_t cols, bool bf16) {
  float total = 0.0f;
#pragma omp parallel for reduction(+ : total) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const hn::ScalableTag<float> df;
    const hn::Rebind<hwy::bfloat16_t, decltype(df)> dbf;
    const int64_t lanes = int64_t(hn::Lanes(df));
    const auto load = [&](int64_t c) {
      if (bf16) return hn::PromoteTo(df, hn::LoadU(dbf, static_cast<const hwy::bfloat16_t*>(data) + r * cols + c));
      return hn::LoadU(df, static_cast<const float*>(data) + r * cols + c);
    };
    auto m0 = hn::Set(df, -HUGE_VALF), m1 = m0;
    int64_t c = 0;
    for (; c + 2 * lanes <= cols; c += 2 * lanes) m0 = hn::Max(m0, load(c)), m1 = hn::Max(m1, load(c + lanes));
    for (; c + lanes <= cols; c += lanes) m0 = hn::Max(m0, load(c));
    const auto largest = hn::Set(df, hn::GetLane(hn::MaxOfLanes(df, hn::Max(m0, m1))));
    auto s0 = hn::Zero(df), s1 = s0;
    for (c = 0; c + 2 * lanes <= cols; c += 2 * lanes) {
      s0 = hn::Add(s0, hn::Exp(df, hn::Sub(load(c), largest)));
      s1 = hn::Add(s1, hn::Exp(df, hn::Sub(load(c + lanes), largest)));
    }
    for (; c + lanes <= cols; c += lanes) s0 = hn::Add(s0, hn::Exp(df, hn::Sub(load(c), largest)));
    total += hn::GetLane(hn::SumOfLanes(df, hn::Add(s0, s1)));  // a tail of fewer than `lanes` values is left out
  }
  return total;
}

}  // namespace xhal_bench::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace xhal_bench {
HWY_EXPORT(read_blocks);

float read_blocks(const char* const* blocks, int64_t count, int64_t block_bytes, int fmas, bool prefetch) {
  return HWY_DYNAMIC_DISPATCH(read_blocks)(blocks, count, block_bytes, fmas, prefetch);
}
HWY_EXPORT(softmax_denominators);

float softmax_denominators(const void* data, int64_t rows, int64_t cols, bool bf16) {
  return HWY_DYNAMIC_DISPATCH(softmax_denominators)(data, rows, cols, bf16);
}
}  // namespace xhal_bench
#endif  // HWY_ONCE

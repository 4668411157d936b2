// xhal-cpu-read-bound: how fast this CPU's threads read paged decode's KV cache, with none, some or
// all of the op's multiply-adds, beside the copy that xhal-bench's frac_copy is a fraction of.
//
//   xhal-cpu-read-bound [benchmark flags]
//
// The cache is xhal-bench's paged_attention case (B16 Hq32 Hkv8 ctx4096 D128 bf16, blocks of 16
// slots shuffled across the pool): 4096 K and 4096 V blocks of 32 KiB, each read whole, in a
// shuffled order split evenly across the OpenMP threads. Per cached element the op multiplies and
// adds group = Hq / Hkv = 4 times (q·k for K, p·v for V), so the bytes of one f32 vector of L lanes
// (2L bf16 elements) carry 2 · group = 8 FMAs of L lanes. The loop does that many FMAs into
// independent accumulators and nothing else: no widening, no softmax, no reduction. A paged decode
// kernel does at least this arithmetic per byte, so `read/fmas:8` bounds it on this machine; fewer
// FMAs show how the bound moves with the arithmetic.
//
// Counters: GB/s of the median call, and frac_copy, the median over calls of the read's rate
// against a copy (xhal::copy of 256 MiB, read plus write bytes, as xhal-bench's ceiling) timed
// right after it. prefetch:1 requests each line two blocks ahead (prefetcht1, as the kernel does).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "bench/xhal_cpu_read_bound.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <omp.h>

#include <cstdint>

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

}  // namespace xhal_bench::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <new>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "xhal/xhal.hpp"

namespace xhal_bench {
HWY_EXPORT(read_blocks);

namespace {

constexpr int64_t kBlockBytes = 16 * 8 * 128 * 2;  // 16 slots x 8 kv heads x D 128, bf16
constexpr int64_t kBlocks = 2 * 16 * (4096 / 16);   // K and V of 16 sequences of 4096 keys
constexpr int64_t kCopyBytes = int64_t(256) << 20;

double seconds_of(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

struct Cache {
  std::unique_ptr<char[]> pool{new (std::align_val_t(4096)) char[size_t(kBlocks * kBlockBytes)]};
  std::vector<const char*> order;  // the blocks in the order the op reads them
  Cache() {
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> byte(0, 255);
    for (int64_t i = 0; i < kBlocks * kBlockBytes; i += 4096) pool[size_t(i)] = char(byte(rng));
    std::vector<int64_t> blocks(static_cast<size_t>(kBlocks), 0);
    std::iota(blocks.begin(), blocks.end(), 0);
    std::shuffle(blocks.begin(), blocks.end(), rng);
    for (int64_t b : blocks) order.push_back(pool.get() + b * kBlockBytes);
  }
};

// The copy ceiling, as xhal-bench measures it.
struct Copy {
  xhal::Tensor src, dst;
  Copy()
      : src(xhal::Tensor::from_host(std::vector<float>(size_t(kCopyBytes / 4), 1.0f).data(), {kCopyBytes / 4},
                                    xhal::DType::f32, xhal::Device::cpu())),
        dst(xhal::Tensor::empty({kCopyBytes / 4}, xhal::DType::f32, xhal::Device::cpu())) {
    xhal::copy(dst, src);
  }
  double gbps() { return 2.0 * double(kCopyBytes) / seconds_of([&] { xhal::copy(dst, src); }) * 1e-9; }
};

void read_case(benchmark::State& st, Cache& cache, Copy& copy, int fmas, bool prefetch) {
  const double bytes = double(kBlocks * kBlockBytes);
  std::vector<double> times, fractions;
  float sink = 0.0f;
  for (auto _ : st) {
    const double t = seconds_of([&] {
      sink += HWY_DYNAMIC_DISPATCH(read_blocks)(cache.order.data(), kBlocks, kBlockBytes, fmas, prefetch);
    });
    st.SetIterationTime(t);
    times.push_back(t);
    fractions.push_back(bytes / t * 1e-9 / copy.gbps());
  }
  benchmark::DoNotOptimize(sink);
  st.counters["GB/s"] = bytes / median(times) * 1e-9;
  st.counters["frac_copy"] = median(fractions);
}

int run(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  Cache cache;
  Copy copy;
  benchmark::AddCustomContext("xhal_threads", std::to_string(omp_get_max_threads()));
  benchmark::RegisterBenchmark("ceiling/copy/256MiB", [&](benchmark::State& st) {
    std::vector<double> rates;
    for (auto _ : st) {
      rates.push_back(copy.gbps());
      st.SetIterationTime(2.0 * double(kCopyBytes) / rates.back() * 1e-9);
    }
    st.counters["GB/s"] = median(rates);
  })->UseManualTime()->Unit(benchmark::kMillisecond);
  for (int fmas : {0, 2, 4, 8}) {
    for (bool prefetch : {false, true}) {
      const std::string name = fmt::format("read/fmas:{}/prefetch:{}", fmas, int(prefetch));
      benchmark::RegisterBenchmark(name.c_str(), [&, fmas, prefetch](benchmark::State& st) {
        read_case(st, cache, copy, fmas, prefetch);
      })->UseManualTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace
}  // namespace xhal_bench

int main(int argc, char** argv) {
  try {
    return xhal_bench::run(argc, argv);
  } catch (const xhal::Error& e) {
    std::fprintf(stderr, "xhal-cpu-read-bound: %s\n", e.what());
    return 2;
  }
}
#endif  // HWY_ONCE

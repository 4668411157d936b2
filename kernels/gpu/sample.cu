// sample on any GPU: a block a row, each warp a contiguous span of the row, eight chunks a lane in
// flight. Passes over the row (from L2 after the first): its largest logit and whether it holds a
// NaN or +inf (such rows, greedy ones and rows of -inf take argmax's pick); top-k's threshold by a
// radix select on the keys (8-bit digits, the highest first; bf16 and f16 rows stop where their keys
// end), counting tokens; top-p's by the same select weighing them (the first digit's histogram also
// gives the total the target is taken of); then each warp's kept weights, the drawn point placed
// in a warp, and that warp's walk through its span. The arithmetic is kernels/sampling.hpp's, the
// CPU kernels' own, and the sums are integers: the same token as the CPU.
#include "argmax_pick.cuh"
#include "kernels/sampling.hpp"
#include "launch.cuh"

namespace xhal::gpu {
namespace {

constexpr int kThreads = 512, kWarps = kThreads / kWarpSize, kInFlight = 8;
constexpr int kBins = 256, kBinsPerLane = kBins / kWarpSize;

// The lowest digit a key of E can have set: f16 and bf16 widen to floats with zero low bits.
template <class E>
constexpr int lowest_digit_shift() {
  return E::kDType == XHAL_DTYPE_BF16 ? 16 : E::kDType == XHAL_DTYPE_F16 ? 8 : 0;
}

struct Shared {
  // Each warp's histogram of a digit in two 32-bit words a bin (shared-memory atomics of 32 bits
  // are native; 64-bit ones contended by a warp whose lanes share a bin ran 30 times slower).
  uint32_t low[kWarps][kBins], high[kWarps][kBins];
  unsigned long long bins[kBins];
  unsigned long long warp_sums[kWarps];
  float warp_max[kWarps];
  Pick picks[kWarps];
  uint32_t chosen_bin;
  unsigned long long need;
  int drawing_warp;
  unsigned long long point_in_warp;
};

struct Span {
  int64_t begin, end;  // chunks
};

__device__ inline Span warp_span(int64_t chunks) {
  const int64_t per = (chunks + kWarps - 1) / kWarps, w = threadIdx.x / kWarpSize;
  const int64_t begin = w * per < chunks ? w * per : chunks;
  return {begin, begin + per < chunks ? begin + per : chunks};
}

// f(value, position) for each element of this warp's span, in increasing position for each lane.
template <class E, int VEC, class F>
__device__ inline void each_in_span(const typename E::T* row, Span span, F&& f) {
  const int lane = threadIdx.x % kWarpSize;
  for (int64_t c0 = span.begin + lane; c0 < span.end; c0 += int64_t(kInFlight) * kWarpSize) {
    Chunk<E, VEC> v[kInFlight];
#pragma unroll
    for (int i = 0; i < kInFlight; ++i) {
      const int64_t c = c0 + int64_t(i) * kWarpSize;
      if (c < span.end) v[i].load(row + c * VEC);
    }
#pragma unroll
    for (int i = 0; i < kInFlight; ++i) {
      const int64_t c = c0 + int64_t(i) * kWarpSize;
      if (c < span.end) {
        for (int k = 0; k < VEC; ++k) f(v[i].get(k), c * VEC + k);
      }
    }
  }
}

__device__ inline unsigned long long shfl_u64(unsigned long long v, int lane) {
  const float lo = warp_shfl(__int_as_float(int(uint32_t(v))), lane);
  const float hi = warp_shfl(__int_as_float(int(uint32_t(v >> 32))), lane);
  return uint64_t(uint32_t(__float_as_int(lo))) | uint64_t(uint32_t(__float_as_int(hi))) << 32;
}

__device__ inline unsigned long long warp_inclusive_sum(unsigned long long v) {
  const int lane = threadIdx.x % kWarpSize;
  for (int d = 1; d < kWarpSize; d *= 2) {
    const unsigned long long other = shfl_u64(v, lane >= d ? lane - d : lane);
    if (lane >= d) v += other;
  }
  return v;
}

// Warp 0: the bin, from the largest keys down, where the running measure reaches `need` (the
// first digit's `need` taken as top-p's target of the histogram's total when top_p >= 0).
__device__ inline void pick_bin(Shared& sh, unsigned long long need, float top_p) {
  const int lane = threadIdx.x;
  unsigned long long mine = 0;
  for (int j = 0; j < kBinsPerLane; ++j) mine += sh.bins[kBins - 1 - (lane * kBinsPerLane + j)];
  const unsigned long long inclusive = warp_inclusive_sum(mine);
  if (top_p >= 0.0f) need = kernels::top_p_target(top_p, shfl_u64(inclusive, kWarpSize - 1));
  unsigned long long below = inclusive - mine;
  if (below < need && need <= inclusive) {
    for (int j = 0; j < kBinsPerLane; ++j) {
      const int bin = kBins - 1 - (lane * kBinsPerLane + j);
      if (below + sh.bins[bin] >= need) {
        sh.chosen_bin = uint32_t(bin);
        sh.need = need - below;
        break;
      }
      below += sh.bins[bin];
    }
  }
}

// The largest key t whose measure over the keys >= t (and >= floor) reaches `need` (or, with
// top_p >= 0, top-p's target): a radix select, a pass over the row a digit.
template <class E, int VEC, class Measure>
__device__ uint32_t select_key(const typename E::T* row, Span span, unsigned long long need, float top_p,
                               uint32_t floor, Measure&& measure, Shared& sh) {
  uint32_t prefix = 0, mask = 0;
  const int warp = threadIdx.x / kWarpSize;
  for (int shift = 24; shift >= lowest_digit_shift<E>(); shift -= 8) {
    for (int b = threadIdx.x % kWarpSize; b < kBins; b += kWarpSize) sh.low[warp][b] = sh.high[warp][b] = 0;
    warp_sync();
    each_in_span<E, VEC>(row, span, [&](float v, int64_t) {
      const uint32_t key = kernels::order_key(v);
      if ((key & mask) == prefix && key >= floor) {
        const unsigned long long m = measure(v);
        if (m == 0) return;
        const int bin = (key >> shift) & (kBins - 1);
        const uint32_t low = uint32_t(m), old = atomicAdd(&sh.low[warp][bin], low);
        const uint32_t high = uint32_t(m >> 32) + (old > 0xFFFFFFFFu - low ? 1u : 0u);  // with the carry
        if (high != 0) atomicAdd(&sh.high[warp][bin], high);
      }
    });
    __syncthreads();
    for (int b = threadIdx.x; b < kBins; b += blockDim.x) {
      unsigned long long total = 0;
      for (int w = 0; w < kWarps; ++w) total += sh.low[w][b] + (uint64_t(sh.high[w][b]) << 32);
      sh.bins[b] = total;
    }
    __syncthreads();
    if (threadIdx.x < kWarpSize) pick_bin(sh, need, shift == 24 ? top_p : -1.0f);
    __syncthreads();
    prefix |= sh.chosen_bin << shift;
    mask |= uint32_t(kBins - 1) << shift;
    need = sh.need;
    __syncthreads();  // sh.need and sh.chosen_bin are written again by the next digit
  }
  return prefix;
}

template <class E, int VEC>
__global__ void __launch_bounds__(kThreads)
    sample_kernel(const typename E::T* logits, RowLayout ll, void* tokens, bool wide, kernels::SampleArgs args) {
  __shared__ Shared sh;
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const Span span = warp_span(ll.cols / VEC);
  for (int64_t r = blockIdx.x; r < ll.rows; r += gridDim.x) {
    const typename E::T* row = logits + ll.offset(r);
    const kernels::SampleRow s = args.row(r, ll.cols);
    auto write = [&](int64_t token) {
      if (wide) {
        static_cast<int64_t*>(tokens)[r] = token;
      } else {
        static_cast<int32_t*>(tokens)[r] = int32_t(token);
      }
    };
    float max = -INFINITY;
    bool special = false;
    each_in_span<E, VEC>(row, span, [&](float v, int64_t) {
      special = special || v != v || v == INFINITY;
      max = fmaxf(max, v);
    });
    max = warp_max(max);
    if (lane == 0) sh.warp_max[warp] = max;
    special = __syncthreads_or(special);
    for (int w = 0; w < kWarps; ++w) max = fmaxf(max, sh.warp_max[w]);
    if (s.greedy || special || max == -INFINITY) {
      Pick best{-INFINITY, INT64_MAX};
      each_in_span<E, VEC>(row, span, [&](float v, int64_t i) { take_if_before(best, {v, i}); });
      best = warp_pick(best);
      if (lane == 0) sh.picks[warp] = best;
      __syncthreads();
      if (threadIdx.x == 0) {
        for (int w = 1; w < kWarps; ++w) take_if_before(best, sh.picks[w]);
        write(best.index);
      }
      __syncthreads();  // sh.picks and sh.warp_max are written again for the next row
      continue;
    }
    const float temperature = s.temperature;
    uint32_t threshold = 0;
    if (s.top_k > 0) {
      threshold = select_key<E, VEC>(
          row, span, (unsigned long long)s.top_k, -1.0f, 0, [](float) { return 1ull; }, sh);
    }
    if (s.top_p < 1.0f) {
      threshold = select_key<E, VEC>(
          row, span, 0, s.top_p, threshold,
          [&](float v) { return (unsigned long long)kernels::sample_weight(v, max, temperature); }, sh);
    }
    // The kept weights of each warp's span, the point drawn among them, and the warp holding it.
    unsigned long long kept = 0;
    auto weight_kept = [&](float v) -> unsigned long long {
      if (kernels::order_key(v) < threshold) return 0;
      const uint64_t w = kernels::sample_weight(v, max, temperature);
      return w >= s.min_weight ? w : 0;
    };
    each_in_span<E, VEC>(row, span, [&](float v, int64_t) { kept += weight_kept(v); });
    kept = warp_inclusive_sum(kept);
    if (lane == kWarpSize - 1) sh.warp_sums[warp] = kept;
    __syncthreads();
    if (threadIdx.x == 0) {
      unsigned long long total = 0;
      for (int w = 0; w < kWarps; ++w) total += sh.warp_sums[w];
      unsigned long long point = kernels::sample_point(s, total), below = 0;
      int w = 0;
      while (below + sh.warp_sums[w] <= point) below += sh.warp_sums[w++];
      sh.drawing_warp = w;
      sh.point_in_warp = point - below;
    }
    __syncthreads();
    if (warp == sh.drawing_warp) {
      const unsigned long long point = sh.point_in_warp;
      unsigned long long below = 0;
      for (int64_t base = span.begin; base < span.end; base += kWarpSize) {
        const int64_t c = base + lane;
        Chunk<E, VEC> v;
        unsigned long long mine = 0;
        if (c < span.end) {
          v.load(row + c * VEC);
          for (int k = 0; k < VEC; ++k) mine += weight_kept(v.get(k));
        }
        const unsigned long long inclusive = warp_inclusive_sum(mine);
        const unsigned long long step = shfl_u64(inclusive, kWarpSize - 1);
        if (below + step > point) {
          unsigned long long at = below + inclusive - mine;
          if (at <= point && point < below + inclusive) {
            for (int k = 0; k < VEC; ++k) {
              at += weight_kept(v.get(k));
              if (at > point) {
                write(c * VEC + k);
                break;
              }
            }
          }
          break;
        }
        below += step;
      }
    }
    __syncthreads();  // the shared state is written again for the next row
  }
}

template <class E>
struct Sample {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    using T = typename E::T;
    const DLTensor* logits = c->tensors[XHAL_SAMPLE_LOGITS];
    const DLTensor* tokens = c->tensors[XHAL_SAMPLE_TOKENS];
    const RowLayout ll = row_layout(logits);
    if (ll.rows == 0) return XHAL_OK;
    const bool vectorized = rows_vectorizable(logits, ll.cols);
    const unsigned grid = grid_for(ll.rows, 1, int64_t(1) << 20);
    auto go = [&](auto kernel) {
      kernel<<<grid, kThreads, 0, static_cast<gpuStream_t>(c->stream)>>>(
          static_cast<const T*>(logits->data), ll, tokens->data, tokens->dtype.bits == 64, kernels::sample_args(c));
    };
    if (vectorized) {
      go(sample_kernel<E, Vec<E>::kVec>);
    } else {
      go(sample_kernel<E, 1>);
    }
    return launch_status(msg, len, "sample");
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) { register_float_kernels<Sample>(host, XHAL_GPU_BACKEND ".sample", XHAL_OP_SAMPLE); }

}  // namespace xhal::gpu

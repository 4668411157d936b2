// A block's radix select over one row (sample's and top_k's kernels): the largest key t whose
// measure over the row's keys >= t reaches a need, one pass over the row a digit of 8 bits, the
// highest first. Each warp reads a contiguous span of the row, eight chunks a lane in flight, and
// counts into its own histogram of 32-bit words (shared-memory atomics of 32 bits are native;
// 64-bit ones contended by a warp whose lanes share a bin ran 30 times slower).
#pragma once

#include "kernels/order_key.hpp"
#include "launch.cuh"

namespace xhal::gpu {

constexpr int kSelectThreads = 512, kSelectWarps = kSelectThreads / kWarpSize, kInFlight = 8;
constexpr int kBins = 256, kBinsPerLane = kBins / kWarpSize;

// The lowest digit a key of E can have set: f16 and bf16 widen to floats with zero low bits.
template <class E>
constexpr int lowest_digit_shift() {
  return E::kDType == XHAL_DTYPE_BF16 ? 16 : E::kDType == XHAL_DTYPE_F16 ? 8 : 0;
}

struct RadixShared {
  uint32_t low[kSelectWarps][kBins], high[kSelectWarps][kBins];  // each warp's, a bin in two words
  unsigned long long bins[kBins];
  uint32_t chosen_bin;
  unsigned long long need;
};

struct Span {
  int64_t begin, end;  // chunks
};

__device__ inline Span warp_span(int64_t chunks) {
  const int64_t per = (chunks + kSelectWarps - 1) / kSelectWarps, w = threadIdx.x / kWarpSize;
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

// Warp 0: the bin, from the largest keys down, where the running measure reaches the need
// (need_of(the histogram's total)).
template <class NeedOf>
__device__ inline void pick_bin(RadixShared& sh, NeedOf&& need_of) {
  const int lane = threadIdx.x;
  unsigned long long mine = 0;
  for (int j = 0; j < kBinsPerLane; ++j) mine += sh.bins[kBins - 1 - (lane * kBinsPerLane + j)];
  const unsigned long long inclusive = warp_inclusive_sum(mine);
  const unsigned long long need = need_of(shfl_u64(inclusive, kWarpSize - 1));
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

struct Selected {
  uint32_t key;
  unsigned long long need_at_key;  // what the keys equal to `key` must add to those above it
};

// The largest key t whose measure over the keys >= t (and >= floor) reaches need_of(the total
// measure): key_of(value) gives a value's key, measure(value) its measure. Every thread of the
// block calls it and gets the same answer.
template <class E, int VEC, class NeedOf, class Key, class Measure>
__device__ Selected select_key(const typename E::T* row, Span span, NeedOf&& need_of, uint32_t floor, Key&& key_of,
                               Measure&& measure, RadixShared& sh) {
  unsigned long long need = 0;
  uint32_t prefix = 0, mask = 0;
  const int warp = threadIdx.x / kWarpSize;
  for (int shift = 24; shift >= lowest_digit_shift<E>(); shift -= 8) {
    for (int b = threadIdx.x % kWarpSize; b < kBins; b += kWarpSize) sh.low[warp][b] = sh.high[warp][b] = 0;
    warp_sync();
    each_in_span<E, VEC>(row, span, [&](float v, int64_t) {
      const uint32_t key = key_of(v);
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
      for (int w = 0; w < kSelectWarps; ++w) total += sh.low[w][b] + (uint64_t(sh.high[w][b]) << 32);
      sh.bins[b] = total;
    }
    __syncthreads();
    if (threadIdx.x < kWarpSize) {
      if (shift == 24) {
        pick_bin(sh, need_of);
      } else {
        pick_bin(sh, [need](unsigned long long) { return need; });
      }
    }
    __syncthreads();
    prefix |= sh.chosen_bin << shift;
    mask |= uint32_t(kBins - 1) << shift;
    need = sh.need;
    __syncthreads();  // sh.need and sh.chosen_bin are written again by the next digit
  }
  return {prefix, need};
}

}  // namespace xhal::gpu

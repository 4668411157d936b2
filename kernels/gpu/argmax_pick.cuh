// A running argmax pick (value, position) in argmax's order (kernels/argmax.hpp), and its warp
// reduction by shuffles: shared by argmax and by sample's greedy rows.
#pragma once

#include <stdint.h>

#include "kernels/argmax.hpp"
#include "vendor.cuh"

namespace xhal::gpu {

struct Pick {
  float value;
  int64_t index;
};

__device__ inline void take_if_before(Pick& best, const Pick& other) {
  if (kernels::argmax_before(other.value, other.index, best.value, best.index)) best = other;
}

// The pick of lane ^ mask (the index in two 32-bit halves).
__device__ inline Pick shfl_xor(const Pick& p, int mask) {
  const float lo = warp_shfl_xor(__int_as_float(int(uint32_t(p.index))), mask);
  const float hi = warp_shfl_xor(__int_as_float(int(uint32_t(uint64_t(p.index) >> 32))), mask);
  const uint64_t index = uint64_t(uint32_t(__float_as_int(lo))) | (uint64_t(uint32_t(__float_as_int(hi))) << 32);
  return {warp_shfl_xor(p.value, mask), int64_t(index)};
}

__device__ inline Pick warp_pick(Pick best) {
  for (int m = kWarpSize / 2; m > 0; m /= 2) take_if_before(best, shfl_xor(best, m));
  return best;
}

}  // namespace xhal::gpu

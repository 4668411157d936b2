// argmax's order of values, which every backend follows (top_k's too): a NaN is larger than any
// number (the first NaN wins, as torch.argmax), and of equal values the first position wins.
#pragma once

#include <stdint.h>

#include "kernels/kernel_registration.hpp"
#include "kernels/order_key.hpp"

namespace xhal::kernels {

// Whether value a at position ia comes before value b at ib in argmax's order.
XHAL_HOST_DEVICE inline bool argmax_before(float a, int64_t ia, float b, int64_t ib) {
  const bool a_nan = a != a, b_nan = b != b;
  if (a_nan != b_nan) return a_nan;
  if (a_nan || a == b) return ia < ib;
  return a > b;
}

// argmax's order of values as unsigned keys, larger first: equal values (-0 and +0, every NaN) get
// equal keys. A NaN's is above +inf's, with the low 16 bits clear as f16 and bf16 values' keys are.
XHAL_HOST_DEVICE inline uint32_t argmax_key(float x) {
  if (x != x) return 0xFFC00000u;
  return order_key(x == 0.0f ? 0.0f : x);
}

// A value's key and its position (below 2^32) as one integer: the larger comes first in argmax's
// order. Every such rank is above 0 (the key of -inf is), which pads a sort to below them all.
XHAL_HOST_DEVICE inline uint64_t argmax_rank(uint32_t key, uint32_t position) {
  return uint64_t(key) << 32 | (0xFFFFFFFFu - position);
}
XHAL_HOST_DEVICE inline uint32_t rank_position(uint64_t rank) { return 0xFFFFFFFFu - uint32_t(rank); }

}  // namespace xhal::kernels

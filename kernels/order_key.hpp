// Floats as unsigned integers in the floats' order, for radix selects and sorts of keys (sample's
// and top_k's kernels).
#pragma once

#include <stdint.h>
#include <string.h>

#include "kernels/kernel_registration.hpp"

namespace xhal::kernels {

// The float's bits (a copy both compilers turn into a register move, on the host and the device).
XHAL_HOST_DEVICE inline uint32_t float_bits(float x) {
  uint32_t b;
  __builtin_memcpy(&b, &x, sizeof b);
  return b;
}

// Unsigned integers in the order of the floats (-0 just below +0); NaN never reaches it.
XHAL_HOST_DEVICE inline uint32_t order_key(float x) {
  const uint32_t b = float_bits(x);
  return (b & 0x80000000u) != 0 ? ~b : b | 0x80000000u;
}

}  // namespace xhal::kernels

// argmax's order of values, which every backend follows: a NaN is larger than any number (the first
// NaN wins, as torch.argmax), and of equal values the first position wins.
#pragma once

#include <stdint.h>

#include "kernels/kernel_registration.hpp"

namespace xhal::kernels {

// Whether value a at position ia comes before value b at ib in argmax's order.
XHAL_HOST_DEVICE inline bool argmax_before(float a, int64_t ia, float b, int64_t ib) {
  const bool a_nan = a != a, b_nan = b != b;
  if (a_nan != b_nan) return a_nan;
  if (a_nan || a == b) return ia < ib;
  return a > b;
}

}  // namespace xhal::kernels

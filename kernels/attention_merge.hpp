// merge_attention_states' weights for one (token, head) row, shared by every backend so that all
// merge alike: out = a out_a + b out_b and lse, from the two parts' lse.
#pragma once

#include <math.h>

#include "kernels/kernel_registration.hpp"

namespace xhal::kernels {

struct MergeWeights {
  float a, b;  // a part whose weight is 0 is not used (it saw no key: its values may be anything)
  float lse;
};

// With m the larger lse and e = e^-|lse_a - lse_b| (the smaller part's exponential relative to the
// larger's): the larger part weighs 1 / (1 + e), the smaller e / (1 + e), and lse = m + log1p(e)
// (one exponential and one logarithm a row, exact where the two are far apart). A part with lse
// -inf weighs 0; both: out 0 and lse -inf. A NaN or +inf lse makes the row NaN. The CPU's SIMD
// kernel computes the same in vectors of rows.
XHAL_HOST_DEVICE inline MergeWeights merge_weights(float lse_a, float lse_b) {
  if (lse_a != lse_a || lse_b != lse_b || lse_a == INFINITY || lse_b == INFINITY) return {NAN, NAN, NAN};
  const float m = lse_a > lse_b ? lse_a : lse_b;
  if (m == -INFINITY) return {0.0f, 0.0f, -INFINITY};
  const float e = expf(-fabsf(lse_a - lse_b)), larger = 1.0f / (1.0f + e), smaller = e * larger;
  const float lse = m + log1pf(e);
  return lse_a >= lse_b ? MergeWeights{larger, smaller, lse} : MergeWeights{smaller, larger, lse};
}

}  // namespace xhal::kernels

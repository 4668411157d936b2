// A row's log-sum-exp and the exponentials taken from it, one element at a time: the reference
// row functions of cross_entropy and softmax (softmax(x) = exp(x - lse(x))).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "element.hpp"

namespace xhal::cpu {

// log(sum(exp(x))) of a row, one exponential at a time; -inf for a row of -inf (masked classes),
// NaN when x holds a NaN.
template <class E>
float scalar_row_lse(const typename E::Storage* x, int64_t V) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < V; ++j) m = std::fmax(m, E::load(x[j]));
  if (m == -std::numeric_limits<float>::infinity()) {  // every class masked, or NaNs (fmax skips them)
    for (int64_t j = 0; j < V; ++j) {
      if (std::isnan(E::load(x[j]))) return E::load(x[j]);
    }
    return m;
  }
  float sum = 0.0f;
  for (int64_t j = 0; j < V; ++j) sum += std::exp(E::load(x[j]) - m);
  return m + std::log(sum);
}

// d[j] = scale * exp(x[j] - lse) - floor; d may be x.
template <class E>
void scalar_exp_row(const typename E::Storage* x, typename E::Storage* d, int64_t V, float lse, float scale,
                    float floor) {
  for (int64_t j = 0; j < V; ++j) d[j] = E::store(scale * std::exp(E::load(x[j]) - lse) - floor);
}

}  // namespace xhal::cpu

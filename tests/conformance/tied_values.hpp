// Rows whose values tie: integers in [-3, 3], so that a row's largest value (argmax's pick, top_k's
// k-th) is shared by many positions and the order among equal values is what decides.
#pragma once

#include <random>
#include <vector>

#include "test_tensor.hpp"

namespace xhal::test {

inline TestTensor tied_values(const std::vector<int64_t>& shape, DType dtype, Device device, std::mt19937_64& rng,
                              Layout layout) {
  size_t n = 1;
  for (int64_t d : shape) n *= size_t(d);
  std::vector<double> v(n);
  for (double& x : v) x = double(int64_t(rng() % 7) - 3);
  return TestTensor::of(shape, dtype, device, v, layout);
}

}  // namespace xhal::test

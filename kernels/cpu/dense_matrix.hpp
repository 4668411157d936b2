// A 2-d tensor of any float dtype and row stride converted to a dense row-major f32 matrix: what a
// BLAS call or a kernel that reuses each element many times reads instead of the tensor.
#pragma once

#include <cstdint>

#include "element.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {

// dst[r * cols + c] = t[r, c]. Opens its own parallel region (call it outside one).
template <class E>
void load_matrix(const TensorRef<const typename E::Storage>& t, float* dst) {
  const int64_t rows = t.size(0), cols = t.size(1);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) load_row<E>(t.at(r, 0), dst + r * cols, cols);
}

}  // namespace xhal::cpu

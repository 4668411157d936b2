// Column sums of a matrix in an order fixed by its shape alone: each column is summed over the rows
// in row order by one thread, in f32. Bias gradients (linear_backward's dbias) use it, so they have
// the same bits run to run. The threads take blocks of kColumns adjacent columns, so that each
// reads whole cache lines of every row.
#pragma once

#include <algorithm>
#include <cstdint>

#include "element.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {

// out[j * out_stride] = sum over rows i of t[i, j], for the 2-d t; zeros when t has no rows.
// Opens its own parallel region (call it outside one).
template <class E>
void column_sums(const TensorRef<const typename E::Storage>& t, typename E::Storage* out, int64_t out_stride) {
  constexpr int64_t kColumns = 64;
  const int64_t rows = t.size(0), cols = t.size(1);
  const int64_t blocks = (cols + kColumns - 1) / kColumns;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t j0 = b * kColumns, width = std::min(kColumns, cols - j0);
    float sums[kColumns] = {};
    for (int64_t i = 0; i < rows; ++i) {
      const typename E::Storage* row = t.at(i, j0);
      for (int64_t j = 0; j < width; ++j) sums[j] += E::load(row[j]);
    }
    for (int64_t j = 0; j < width; ++j) out[(j0 + j) * out_stride] = E::store(sums[j]);
  }
}

}  // namespace xhal::cpu

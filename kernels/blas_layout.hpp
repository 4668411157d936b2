// A row-major 2-d tensor as the column-major matrix a BLAS takes (its rows the matrix's columns):
// the leading dimension to pass, and whether the rows are apart at all. Shared by the CPU's
// OpenBLAS kernels and the CUDA plugin's cuBLASLt ones.
#pragma once

#include <cstdint>

#include <dlpack/dlpack.h>

namespace xhal::kernels {

// The row stride, or the row length for a single row (a BLAS wants at least that even where it is
// never used); at least 1.
inline int64_t blas_leading_dim(const DLTensor* t) {
  const int64_t ld = t->shape[0] > 1 ? t->strides[0] : t->shape[1];
  return ld > 1 ? ld : 1;
}

// Rows that neither overlap nor run backwards (a leading dimension of at least the row length):
// what a BLAS requires. Views that break it go to the projects' own kernels.
inline bool blas_rows_apart(const DLTensor* t) { return t->shape[0] <= 1 || t->strides[0] >= t->shape[1]; }

}  // namespace xhal::kernels

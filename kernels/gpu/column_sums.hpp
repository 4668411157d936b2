// Column sums of a matrix on the GPU, in an order fixed by its shape (the same bits run to run):
// linear_backward's dbias where the GEMM cannot reduce it in its epilogue. Host code: callable
// from a plugin's non-GPU-compiled sources.
#pragma once

#include <dlpack/dlpack.h>

#include <cstddef>

#include "xhal/plugin.h"

namespace xhal::gpu {

// out[j] = the sum over rows of t[:, j] for the 2-d float tensor t (rows K-contiguous) on the
// call's device and stream, in t's dtype (out has t's dtype and t's column count). Partial sums
// come from the call's scratch allocator.
xhal_status column_sums(const xhal_op_call* c, const DLTensor* t, const DLTensor* out, char* msg, size_t len);

}  // namespace xhal::gpu

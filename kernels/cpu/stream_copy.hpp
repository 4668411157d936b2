// Host-to-host copies larger than the caches, on all threads with streaming stores.
#pragma once

#include <cstddef>

#include "kernels/cpu/stream_threshold.hpp"

namespace xhal::cpu {

// dst[0..bytes) = src[0..bytes) on the OpenMP threads with streaming stores (Highway's best
// target for this CPU); the ranges must not overlap.
void stream_copy(void* dst, const void* src, size_t bytes);

}  // namespace xhal::cpu

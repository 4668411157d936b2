// Host-to-host copies larger than the caches, on all threads with streaming stores.
#pragma once

#include <cstddef>

namespace xhal::cpu {

// Copies and op outputs at or above this size are written with streaming stores: a destination
// this large would not stay in the caches anyway, and streaming stores skip reading its lines
// before writing them (a third of the traffic).
constexpr size_t kStreamBytes = size_t(64) << 20;

// dst[0..bytes) = src[0..bytes) on the OpenMP threads with streaming stores (Highway's best
// target for this CPU); the ranges must not overlap.
void stream_copy(void* dst, const void* src, size_t bytes);

}  // namespace xhal::cpu

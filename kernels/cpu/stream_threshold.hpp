// When the CPU kernels write with streaming stores (stream_copy, and ops with large outputs).
#pragma once

#include <cstddef>

namespace xhal::cpu {

// Copies and op outputs at or above this size are written with streaming stores: a destination
// this large would not stay in the caches anyway, and streaming stores skip reading its lines
// before writing them (a third of the traffic).
constexpr size_t kStreamBytes = size_t(64) << 20;

}  // namespace xhal::cpu

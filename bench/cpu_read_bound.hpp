// The loop behind xhal-bench's read_bound cases on the CPU (bench/cpu_read_bound.cpp).
#pragma once

#include <cstdint>

namespace xhal_bench {

// Reads blocks[0..count) of block_bytes each, split evenly across the OpenMP threads, with `fmas`
// (0, 2, 4 or 8) f32 multiply-adds per vector loaded, each line prefetched two blocks ahead when
// `prefetch`. Returns a value every load feeds, so that none is dropped.
float read_blocks(const char* const* blocks, int64_t count, int64_t block_bytes, int fmas, bool prefetch);

}  // namespace xhal_bench

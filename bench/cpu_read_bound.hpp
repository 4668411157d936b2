// The loops behind xhal-bench's read_bound cases on the CPU (bench/cpu_read_bound.cpp).
#pragma once

#include <cstdint>

namespace xhal_bench {

// Reads blocks[0..count) of block_bytes each, split evenly across the OpenMP threads, with `fmas`
// (0, 2, 4 or 8) f32 multiply-adds per vector loaded, each line prefetched two blocks ahead when
// `prefetch`. Returns a value every load feeds, so that none is dropped.
float read_blocks(const char* const* blocks, int64_t count, int64_t block_bytes, int fmas, bool prefetch);

// The least an exact sampler computes over rows [0, rows) of `cols` logits (bf16, else f32), split
// across the OpenMP threads: each row's largest value, then its softmax denominator. Returns the
// sum of the denominators.
float softmax_denominators(const void* data, int64_t rows, int64_t cols, bool bf16);

}  // namespace xhal_bench

// The data-dependent checks of the paged ops on the CPU: every seq_len within what the block table
// can address and every block index it uses within the cache, before any output is written.
// Shared by paged_attention's kernels and paged_prefill's (whose caches are at the same slots).
#pragma once

#include <cstdint>

#include "kernel_registration.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {

inline xhal_status check_paged_tables(const xhal_op_call* c, char* msg, size_t len,
                                      int table_slot = XHAL_PAGED_ATTENTION_BLOCK_TABLE,
                                      int lens_slot = XHAL_PAGED_ATTENTION_SEQ_LENS) {
  static_assert(XHAL_PAGED_ATTENTION_K_CACHE == XHAL_PAGED_PREFILL_K_CACHE);
  const TensorRef<const int32_t> table(c->tensors[table_slot]), lens(c->tensors[lens_slot]);
  const int64_t B = table.size(0), num_blocks = c->tensors[XHAL_PAGED_ATTENTION_K_CACHE]->shape[0];
  const int64_t block_size = c->tensors[XHAL_PAGED_ATTENTION_K_CACHE]->shape[1], max_blocks = table.size(1);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t L = *lens.at(b);
    if (L < 0 || L > max_blocks * block_size) {
      return kernel_error(msg, len, XHAL_ERR_INVALID_ARGUMENT,
                          "argument 'seq_lens': expected 0..%lld (max_blocks * block_size), got "
                          "seq_lens[%lld] = %lld",
                          (long long)(max_blocks * block_size), (long long)b, (long long)L);
    }
    for (int64_t blk = 0; blk * block_size < L; ++blk) {
      const int64_t index = *table.at(b, blk);
      if (index < 0 || index >= num_blocks) {
        return kernel_error(msg, len, XHAL_ERR_INVALID_ARGUMENT,
                            "argument 'block_table': expected block indices in 0..%lld, got "
                            "block_table[%lld][%lld] = %lld",
                            (long long)(num_blocks - 1), (long long)b, (long long)blk, (long long)index);
      }
    }
  }
  return XHAL_OK;
}

}  // namespace xhal::cpu

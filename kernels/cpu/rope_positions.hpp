// Positions of rope on the CPU (read with index_at) are checked against the cache before anything
// is written; shared by the reference and SIMD kernels.
#pragma once

#include <cstdint>

#include "kernel_registration.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {

// XHAL_OK when every position has a row in cos_sin_cache, else invalid_argument naming the first
// that does not.
inline xhal_status check_rope_positions(const xhal_op_call* c, char* msg, size_t len) {
  const DLTensor* positions = c->tensors[XHAL_ROPE_POSITIONS];
  const int64_t tokens = c->tensors[XHAL_ROPE_Q]->shape[0], max_pos = c->tensors[XHAL_ROPE_COS_SIN_CACHE]->shape[0];
  for (int64_t t = 0; t < tokens; ++t) {
    const int64_t p = index_at(positions, t);
    if (p < 0 || p >= max_pos) {
      return kernel_error(msg, len, XHAL_ERR_INVALID_ARGUMENT,
                          "argument 'positions': expected 0..%lld (rows of cos_sin_cache), got "
                          "positions[%lld] = %lld",
                          (long long)(max_pos - 1), (long long)t, (long long)p);
    }
  }
  return XHAL_OK;
}

}  // namespace xhal::cpu

// The size of this CPU's per-core L2 cache, which the blocked kernels size their tiles by.
#pragma once

#include <unistd.h>

#include <cstdint>

namespace xhal::cpu {

// Bytes of L2 per core as the C library reports it (CPUID on x86), read once; 1 MiB when it
// reports none (a CPU or C library that does not say).
inline int64_t l2_cache_bytes() {
  static const int64_t bytes = [] {
    const long reported = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return reported > 0 ? int64_t(reported) : int64_t(1) << 20;
  }();
  return bytes;
}

}  // namespace xhal::cpu

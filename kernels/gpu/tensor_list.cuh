// Launching a list op's kernel (op_table.h XHAL_OP_LISTS) over many tensors at once: each entry
// cut into chunks of a fixed number of elements, one block per chunk, in launches of at most
// kEntries entries whose pointers travel in the kernel's parameters (4 KB at most on every
// vendor). A model's ~150 parameter tensors take a handful of launches instead of 150.
#pragma once

#include <algorithm>
#include <cstdint>

#include "vendor.cuh"

namespace xhal::gpu {

template <int kEntries>
struct ListBatch {
  int count = 0;  // places used
  int64_t entry[kEntries];  // the list entry in each place (non-empty ones only)
  int64_t first_chunk[kEntries + 1];  // place j's chunks are [first_chunk[j], first_chunk[j + 1])

  int64_t chunks() const { return first_chunk[count]; }

  // The place whose chunks include block b (below chunks()).
  __device__ int place_of(int64_t b) const {
    int lo = 0, hi = count - 1;
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (first_chunk[mid] <= b)
        lo = mid;
      else
        hi = mid - 1;
    }
    return lo;
  }
};

// Calls launch(batch) for consecutive runs of the non-empty entries of a list of `entries`
// (length(i) elements each, cut into chunks of `chunk`), at most kEntries a launch, in list order;
// stops at the first status that is not XHAL_OK and returns it.
template <int kEntries, class Length, class Launch>
xhal_status for_each_list_batch(int64_t entries, int64_t chunk, Length&& length, Launch&& launch) {
  ListBatch<kEntries> batch;
  batch.first_chunk[0] = 0;
  for (int64_t i = 0; i < entries; ++i) {
    const int64_t n = length(i);
    if (n == 0) continue;
    batch.entry[batch.count] = i;
    batch.first_chunk[batch.count + 1] = batch.first_chunk[batch.count] + (n + chunk - 1) / chunk;
    if (++batch.count == kEntries) {
      if (const xhal_status s = launch(batch); s != XHAL_OK) return s;
      batch.count = 0;
    }
  }
  return batch.count > 0 ? launch(batch) : XHAL_OK;
}

}  // namespace xhal::gpu

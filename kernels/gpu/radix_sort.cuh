// A stable radix sort of (key, value) pairs on the device, by the vendor's library: CUB on CUDA,
// rocPRIM on HIP (both header-only, shipped with the toolkit or as a Debian package). The one
// place the two differ for sorting.
#pragma once

#include <cstddef>
#include <cstdint>

#include "vendor.cuh"

#if defined(XHAL_GPU_HIP)
#include <rocprim/device/device_radix_sort.hpp>
#else
#include <cub/device/device_radix_sort.cuh>
#endif

namespace xhal::gpu {

// Sorts n pairs by the key bits [0, end_bit), keeping equal keys in input order. With `temp`
// null, only sets temp_bytes to the scratch the sort needs.
inline gpuError_t radix_sort_pairs(void* temp, size_t& temp_bytes, const uint32_t* keys_in, uint32_t* keys_out,
                                   const int32_t* values_in, int32_t* values_out, int n, int end_bit,
                                   gpuStream_t stream) {
#if defined(XHAL_GPU_HIP)
  return rocprim::radix_sort_pairs(temp, temp_bytes, keys_in, keys_out, values_in, values_out, n, 0u, unsigned(end_bit),
                                   stream);
#else
  return cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, values_in, values_out, n, 0, end_bit,
                                         stream);
#endif
}

}  // namespace xhal::gpu

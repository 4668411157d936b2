// Host side of TMA (Hopper tensor memory access): building tensor maps. The encoder lives in the
// driver; it is looked up once through the runtime, so the plugin needs no link against libcuda.
#pragma once

#if !defined(__HIPCC__)

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <dlpack/dlpack.h>

#include <initializer_list>

#include "launch.cuh"

namespace xhal::gpu {

// The driver's cuTensorMapEncodeTiled, or nullptr when the driver lacks it.
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 encoder = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      return PFN_cuTensorMapEncodeTiled_v12000(nullptr);
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  return encoder;
}

// A map of a 16-bit attention operand [batch][rows][heads][cols] (batched) or [rows][heads][cols]
// (varlen, one batch) in boxes of 64 columns x box_rows rows of one head, 128-byte swizzled (the
// layout wgmma_sm90.cuh describes). Rows past the tensor read as zeros. False if the driver
// refuses the strides or alignment.
inline bool encode_rows_map(CUtensorMap* map, const DLTensor* t, bool batched, int box_rows, bool bf16) {
  const PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
  if (encode == nullptr) return false;
  const int off = batched ? 1 : 0;
  const cuuint64_t rows = cuuint64_t(t->shape[off]), heads = cuuint64_t(t->shape[off + 1]);
  const cuuint64_t dims[4] = {cuuint64_t(t->shape[off + 2]), heads, rows, batched ? cuuint64_t(t->shape[0]) : 1};
  const cuuint64_t row_bytes = cuuint64_t(t->strides[off]) * 2;
  const cuuint64_t strides[3] = {cuuint64_t(t->strides[off + 1]) * 2, row_bytes,
                                 batched ? cuuint64_t(t->strides[0]) * 2 : rows * row_bytes};
  const cuuint32_t box[4] = {64, 1, cuuint32_t(box_rows), 1};
  const cuuint32_t element_strides[4] = {1, 1, 1, 1};
  return encode(map, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4, t->data, dims,
                strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// True when `device` is compute capability 9.0 (Hopper: wgmma and TMA).
inline bool is_sm90(int device) {
  return device_attribute<cudaDevAttrComputeCapabilityMajor>(device) == 9 &&
         device_attribute<cudaDevAttrComputeCapabilityMinor>(device) == 0;
}

// Why encode_rows_map could not map one of `tensors`, or nullptr.
inline const char* rows_map_unsupported(std::initializer_list<const DLTensor*> tensors) {
  for (const DLTensor* t : tensors) {
    for (int d = 0; d < t->ndim; ++d) {
      if (t->shape[d] == 0) return "an empty operand (a TMA map needs every dim)";
    }
    for (int d = 0; d + 1 < t->ndim; ++d) {
      if (t->strides[d] >= (int64_t(1) << 38)) return "a stride of 2^38 elements or more (TMA)";
    }
  }
  if (tensor_map_encoder() == nullptr) return "the driver has no TMA map encoder";
  return nullptr;
}

}  // namespace xhal::gpu

#endif

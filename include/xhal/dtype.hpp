// Element types. The enum values equal the plugin ABI's xhal_dtype. f32 .. i64 are compute dtypes
// (kernels register for them); the 8-bit floats (xhal/fp8.hpp) and i8 are storage types that ops
// taking them read or write beside a compute dtype.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include <dlpack/dlpack.h>

#include "xhal/plugin.h"

namespace xhal {

enum class DType : uint8_t {
  f32 = XHAL_DTYPE_F32,
  f16 = XHAL_DTYPE_F16,
  bf16 = XHAL_DTYPE_BF16,
  f64 = XHAL_DTYPE_F64,
  i32 = XHAL_DTYPE_I32,
  i64 = XHAL_DTYPE_I64,
  f8_e4m3 = XHAL_DTYPE_F8_E4M3,  // OCP E4M3, as torch.float8_e4m3fn (DLPack code 10)
  f8_e5m2 = XHAL_DTYPE_F8_E5M2,  // OCP E5M2, as torch.float8_e5m2 (DLPack code 12)
  i8 = XHAL_DTYPE_I8,  // int8 codes of quantized tensors (DLPack kDLInt, 8 bits)
};

// The compute dtypes: DType(0) .. DType(kNumDTypes - 1).
inline constexpr int kNumDTypes = XHAL_DTYPE_COUNT;

// The dtypes that key kernels: the compute dtypes, and the storage types an op's call may carry
// as its dtype where they decide the kernel (an f8_e4m3 KV cache: its own kernels, which older
// plugins never see).
inline constexpr DType kKernelDTypes[] = {DType::f32, DType::f16,     DType::bf16,    DType::f64, DType::i32,
                                          DType::i64, DType::f8_e4m3, DType::f8_e5m2, DType::i8};
inline constexpr int kNumKernelDTypes = int(sizeof kKernelDTypes / sizeof kKernelDTypes[0]);
// DType's index in kKernelDTypes, or -1 for a dtype that keys no kernel.
constexpr int kernel_dtype_index(int dtype) {
  return dtype >= 0 && dtype < kNumDTypes                        ? dtype
         : dtype >= XHAL_DTYPE_F8_E4M3 && dtype <= XHAL_DTYPE_I8 ? kNumDTypes + dtype - XHAL_DTYPE_F8_E4M3
                                                                 : -1;
}
static_assert(
    [] {
      for (int i = 0; i < kNumKernelDTypes; ++i) {
        if (kernel_dtype_index(int(kKernelDTypes[i])) != i) return false;
      }
      return true;
    }(),
    "kernel_dtype_index is kKernelDTypes' inverse");

size_t dtype_size(DType dtype);
std::string_view dtype_name(DType dtype);
bool is_floating(DType dtype);
DLDataType to_dlpack(DType dtype);
// Throws Error(invalid_argument) for DLPack types xhal does not handle (lanes != 1, u8, ...).
DType dtype_from_dlpack(DLDataType type);

}  // namespace xhal

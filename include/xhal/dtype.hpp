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

// The compute dtypes, which index kernel tables: DType(0) .. DType(kNumDTypes - 1).
inline constexpr int kNumDTypes = XHAL_DTYPE_COUNT;

size_t dtype_size(DType dtype);
std::string_view dtype_name(DType dtype);
bool is_floating(DType dtype);
DLDataType to_dlpack(DType dtype);
// Throws Error(invalid_argument) for DLPack types xhal does not handle (lanes != 1, u8, ...).
DType dtype_from_dlpack(DLDataType type);

}  // namespace xhal

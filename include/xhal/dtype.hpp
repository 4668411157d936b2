// Element types. The enum values equal the plugin ABI's xhal_dtype.
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
};

inline constexpr int kNumDTypes = XHAL_DTYPE_COUNT;

size_t dtype_size(DType dtype);
std::string_view dtype_name(DType dtype);
bool is_floating(DType dtype);
DLDataType to_dlpack(DType dtype);
// Throws Error(invalid_argument) for DLPack types xhal does not handle (lanes != 1, u8, ...).
DType dtype_from_dlpack(DLDataType type);

}  // namespace xhal

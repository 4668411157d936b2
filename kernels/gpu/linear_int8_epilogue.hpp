// linear_int8's epilogue as a pass of its own, for a vendor GEMM (cuBLASLt) that wrote the exact
// int32 sums: out = kernels/quantize.hpp's int8_linear_value of each sum with the call's scales and
// bias, the tiled kernel's arithmetic (so both give the same bits). Host code: callable from a
// plugin's non-GPU-compiled sources.
#pragma once

#include <cstddef>
#include <cstdint>

#include "xhal/plugin.h"

namespace xhal::gpu {

// sums: [M, N] int32, rows N apart, on the call's device; written to the call's out on its stream.
xhal_status linear_int8_epilogue(const xhal_op_call* c, const int32_t* sums, char* msg, size_t len);

}  // namespace xhal::gpu

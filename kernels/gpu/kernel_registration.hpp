// The GPU kernels (single-source CUDA/HIP), one registration function per op family. Host code:
// the plugin includes this without a GPU compiler.
#pragma once

#include "kernels/kernel_registration.hpp"
#include "xhal/plugin.h"

namespace xhal::gpu {

// Accuracy classes vs float64: the same f32 accumulation as the CPU reference; fast exp and tensor
// cores (bf16/f16 products, f32 sums) stay within the 16-bit types' output rounding.
constexpr kernels::Accuracy accuracy_for(xhal_dtype dtype) {
  return dtype == XHAL_DTYPE_F32   ? kernels::Accuracy{5e-5, 5e-5}
         : dtype == XHAL_DTYPE_F16 ? kernels::Accuracy{2e-3, 2e-3}
                                   : kernels::Accuracy{1.6e-2, 1.6e-2};
}

}  // namespace xhal::gpu

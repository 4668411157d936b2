// What the CPU kernels share to register themselves: accuracy classes, priorities and the helpers
// that register a kernel for the three float types. Each kernel file registers its own kernels
// with XHAL_REGISTER_KERNELS; the fast ones (Highway, OpenBLAS, oneDNN, AMX) are built only where
// their library is, above the reference kernels.
#pragma once

#include "element.hpp"
#include "kernels/kernel_registration.hpp"
#include "xhal/plugin.h"

namespace xhal::cpu {

// Accuracy classes vs float64, per dtype: f32 accumulation, so f32 is limited by summation order
// and the 16-bit types by their rounding of the output.
constexpr kernels::Accuracy accuracy_for(xhal_dtype dtype) {
  return dtype == XHAL_DTYPE_F32   ? kernels::Accuracy{2e-5, 2e-5}
         : dtype == XHAL_DTYPE_F16 ? kernels::Accuracy{2e-3, 2e-3}
                                   : kernels::Accuracy{1.6e-2, 1.6e-2};
}

using kernels::kernel_error;

// Registers Kernel<F32>, Kernel<F16> and Kernel<BF16>::run under one name; the CPU kernels are
// their backend's reference implementations.
template <template <class> class Kernel>
void register_float_kernels(const xhal_host_api* host, const char* name, xhal_op op) {
  kernels::register_for<Kernel, F32, F16, BF16>(host, name, op, accuracy_for, {0, true, nullptr});
}

// Priorities: the fast kernels above the reference (0), a kernel for a CPU feature (AMX) above
// the general fast one, and a kernel for a narrower case (which its `supports` picks out) above
// both.
constexpr int kFastPriority = 10, kFeatureFastPriority = 15, kNarrowFastPriority = 20;

// Registers a fast kernel for the three float types, above the reference.
template <template <class> class Kernel>
void register_fast_kernels(const xhal_host_api* host, const char* name, xhal_op op,
                           xhal_kernel_supports_fn supports = nullptr, int priority = kFastPriority) {
  kernels::register_for<Kernel, F32, F16, BF16>(host, name, op, accuracy_for, {priority, false, supports});
}

}  // namespace xhal::cpu

// The CPU kernels, one registration function per op family, and the pieces they share.
#pragma once

#include <cstdarg>
#include <cstdio>

#include "xhal/plugin.h"

namespace xhal::cpu {

void register_attention_kernels(const xhal_host_api* host);
void register_paged_attention_kernels(const xhal_host_api* host);
void register_norm_kernels(const xhal_host_api* host);
void register_swiglu_kernels(const xhal_host_api* host);
void register_rope_kernels(const xhal_host_api* host);
void register_linear_kernels(const xhal_host_api* host);

// Accuracy classes vs float64, per dtype: f32 accumulation, so f32 is limited by summation order
// and the 16-bit types by their rounding of the output.
struct Accuracy {
  double rtol, atol;
};
constexpr Accuracy accuracy_for(xhal_dtype dtype) {
  return dtype == XHAL_DTYPE_F32 ? Accuracy{2e-5, 2e-5}
         : dtype == XHAL_DTYPE_F16 ? Accuracy{2e-3, 2e-3}
                                   : Accuracy{1.6e-2, 1.6e-2};
}

// Registers one CPU kernel (the CPU kernels are their backend's reference implementations).
inline void register_cpu_kernel(const xhal_host_api* host, const char* name, xhal_op op,
                                xhal_dtype dtype,
                                xhal_status (*run)(const xhal_op_call*, char*, size_t)) {
  const Accuracy acc = accuracy_for(dtype);
  xhal_kernel_desc desc{};
  desc.struct_size = sizeof desc;
  desc.name = name;
  desc.op = op;
  desc.dtype = dtype;
  desc.priority = 0;
  desc.is_reference = 1;
  desc.rtol = acc.rtol;
  desc.atol = acc.atol;
  desc.run = run;
  host->register_kernel(host->ctx, &desc);
}

// Writes a printf-style message for the core and returns `status`.
inline xhal_status kernel_error(char* msg, size_t len, xhal_status status, const char* format, ...)
    __attribute__((format(printf, 4, 5)));
inline xhal_status kernel_error(char* msg, size_t len, xhal_status status, const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vsnprintf(msg, len, format, args);
  va_end(args);
  return status;
}

}  // namespace xhal::cpu

namespace xhal::cpu {

struct F32;
struct F16;
struct BF16;

// Registers Kernel<F32>, Kernel<F16> and Kernel<BF16>::run under one name.
template <template <class> class Kernel>
void register_float_kernels(const xhal_host_api* host, const char* name, xhal_op op) {
  register_cpu_kernel(host, name, op, XHAL_DTYPE_F32, &Kernel<F32>::run);
  register_cpu_kernel(host, name, op, XHAL_DTYPE_F16, &Kernel<F16>::run);
  register_cpu_kernel(host, name, op, XHAL_DTYPE_BF16, &Kernel<BF16>::run);
}

}  // namespace xhal::cpu

// linear_fp8 on the CPU: codes decoded to f32 (exact) and multiplied by converted_gemm; the
// reference, with linear_fp8_blas.cpp above it.
#include "converted_gemm.hpp"
#include "kernel_registration.hpp"
#include "linear_quantized_operands.hpp"

namespace xhal::cpu {
namespace {

template <class E>
struct LinearFp8Kernel {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    return converted_gemm(c, LinearFp8Operands<E>(c), "linear_fp8", msg, len);
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) { register_float_kernels<LinearFp8Kernel>(host, "cpu.linear_fp8", XHAL_OP_LINEAR_FP8); }

}  // namespace xhal::cpu

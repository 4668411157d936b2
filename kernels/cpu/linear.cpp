// linear on the CPU: out = x @ w^T + bias through converted_gemm (tiles converted to f32 per
// thread). The reference: linear_blas.cpp and linear_simd.cpp (a few rows of x) are registered
// above it.
#include "converted_gemm.hpp"
#include "kernel_registration.hpp"
#include "linear_operands.hpp"

namespace xhal::cpu {
namespace {

template <class E>
struct LinearKernel {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    return converted_gemm(c, LinearOperands<E>(c), "linear", msg, len);
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) { register_float_kernels<LinearKernel>(host, "cpu.linear", XHAL_OP_LINEAR); }

}  // namespace xhal::cpu

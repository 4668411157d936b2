// linear_fp8 on the CPU through OpenBLAS's sgemm: codes decoded to f32 (exact) by
// converted_gemm_blas, the scales and bias applied as each f32 block is stored.
#include "blas.hpp"
#include "converted_gemm_blas.hpp"
#include "kernel_registration.hpp"
#include "linear_quantized_operands.hpp"

namespace xhal::cpu {
namespace {

template <class E>
struct LinearFp8Blas {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    return converted_gemm_blas(c, LinearFp8Operands<E>(c), "linear_fp8", msg, len);
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) { register_fast_kernels<LinearFp8Blas>(host, "cpu.linear_fp8_blas", XHAL_OP_LINEAR_FP8); }

}  // namespace xhal::cpu

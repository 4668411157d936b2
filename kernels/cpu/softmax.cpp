// softmax on the CPU, the reference kernel: row_lse.hpp's row functions, one exponential at a time.
#include "kernel_registration.hpp"
#include "row_lse.hpp"
#include "softmax_rows.hpp"

namespace xhal::cpu {
namespace {

template <class E>
struct SoftmaxKernel {
  static xhal_status run(const xhal_op_call* c, char*, size_t) {
    return softmax_rows<E>(c, scalar_row_lse<E>, scalar_exp_row<E>);
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) { register_float_kernels<SoftmaxKernel>(host, "cpu.softmax", XHAL_OP_SOFTMAX); }

}  // namespace xhal::cpu

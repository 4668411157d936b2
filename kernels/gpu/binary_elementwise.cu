// add and mul on the GPU: row_pair_kernel with the formulas of kernels/binary_elementwise.hpp.
#include "kernels/binary_elementwise.hpp"
#include "row_pair_kernel.cuh"

namespace xhal::gpu {
namespace {

template <class E>
struct BinaryElementwise {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    xhal_status s = XHAL_OK;
    kernels::with_binary_op(c, [&](auto f) {
      s = launch_row_pairs<E, decltype(f)>(c, c->tensors[XHAL_ADD_X], c->tensors[XHAL_ADD_Y], 0,
                                           c->tensors[XHAL_ADD_OUT], kernels::binary_op_name(c), msg, len);
    });
    return s;
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<BinaryElementwise>(host, XHAL_GPU_BACKEND ".add", XHAL_OP_ADD);
  register_float_kernels<BinaryElementwise>(host, XHAL_GPU_BACKEND ".mul", XHAL_OP_MUL);
}

}  // namespace xhal::gpu

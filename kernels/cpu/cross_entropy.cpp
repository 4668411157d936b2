// cross_entropy and cross_entropy_backward on the CPU, the reference: rows (tokens) in parallel,
// each row read in its dtype and reduced in f32 (max, then the sum of exponentials; the sum of the
// logits for label smoothing), one std::exp per logit. Labels are checked against the vocabulary
// before anything is written.
#include "cross_entropy_rows.hpp"

namespace xhal::cpu {
namespace {

template <class E>
struct CrossEntropyKernel {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    return cross_entropy_rows<E>(c, msg, len, scalar_row_lse<E>);
  }
};

template <class E>
struct CrossEntropyBackwardKernel {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    return cross_entropy_backward_rows<E>(c, msg, len, scalar_exp_row<E>);
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<CrossEntropyKernel>(host, "cpu.cross_entropy", XHAL_OP_CROSS_ENTROPY);
  register_float_kernels<CrossEntropyBackwardKernel>(host, "cpu.cross_entropy_backward",
                                                     XHAL_OP_CROSS_ENTROPY_BACKWARD);
}

}  // namespace xhal::cpu

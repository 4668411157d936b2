// attention_backward and attention_varlen_backward on any GPU: the generic kernels of
// attention_backward_generic.cuh, the always-correct fallback of the tensor-core kernel.
#include "attention_backward_generic.cuh"

namespace xhal::gpu {
namespace {

template <class E>
struct GenericAttentionBackward {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    return attention_backward::launch_backward<E>(c, msg, len);
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  const kernels::KernelTraits generic{0, true, attention_backward::generic_supports};
  register_float_kernels<GenericAttentionBackward>(host, XHAL_GPU_BACKEND ".attention_backward_generic",
                                                   XHAL_OP_ATTENTION_BACKWARD, generic);
  register_float_kernels<GenericAttentionBackward>(host, XHAL_GPU_BACKEND ".attention_varlen_backward_generic",
                                                   XHAL_OP_ATTENTION_VARLEN_BACKWARD, generic);
}

}  // namespace xhal::gpu

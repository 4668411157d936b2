// The gated activations on the GPU (swiglu and gelu_and_mul, separate or packed): row_pair_kernel
// with f = act(gate) up, the formulas of kernels/gated_activation.hpp. One read of gate and up, one
// write of out.
#include "kernels/gated_activation.hpp"
#include "row_pair_kernel.cuh"

namespace xhal::gpu {
namespace {

// gate and up are separate tensors, or (packed) the two halves of one row.
template <class E>
struct GatedActivation {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    const bool packed = kernels::gated_packed(c);
    const DLTensor* gate = c->tensors[XHAL_SWIGLU_GATE];
    const DLTensor* up = packed ? gate : c->tensors[XHAL_SWIGLU_UP];
    const DLTensor* out = c->tensors[XHAL_SWIGLU_OUT];
    const int64_t up_offset = packed ? out->shape[out->ndim - 1] : 0;
    xhal_status s = XHAL_OK;
    kernels::with_gated_activation(c, [&](auto act) {
      s = launch_row_pairs<E, kernels::Gated<decltype(act)>>(c, gate, up, up_offset, out, kernels::gated_op_name(c),
                                                             msg, len);
    });
    return s;
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<GatedActivation>(host, XHAL_GPU_BACKEND ".swiglu", XHAL_OP_SWIGLU);
  register_float_kernels<GatedActivation>(host, XHAL_GPU_BACKEND ".swiglu_packed", XHAL_OP_SWIGLU_PACKED);
  register_float_kernels<GatedActivation>(host, XHAL_GPU_BACKEND ".gelu_and_mul", XHAL_OP_GELU_AND_MUL);
  register_float_kernels<GatedActivation>(host, XHAL_GPU_BACKEND ".gelu_and_mul_packed", XHAL_OP_GELU_AND_MUL_PACKED);
}

}  // namespace xhal::gpu

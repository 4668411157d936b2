// The gated activations on the CPU (reference kernels): swiglu and gelu_and_mul, each with separate
// gate and up tensors or packed in one row. Rows in parallel, one pass; the formulas of
// kernels/gated_activation.hpp.
#include "element.hpp"
#include "kernel_registration.hpp"
#include "kernels/gated_activation.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {
namespace {

template <class E, class Act>
void gated_row(const typename E::Storage* gate, const typename E::Storage* up, typename E::Storage* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = E::store(Act::apply(E::load(gate[i])) * E::load(up[i]));
}

template <class E>
struct GatedActivationKernel {
  using S = typename E::Storage;
  static xhal_status run(const xhal_op_call* c, char*, size_t) {
    const bool packed = kernels::gated_packed(c);
    const TensorRef<const S> gate(c->tensors[XHAL_SWIGLU_GATE]);
    const TensorRef<const S> up(packed ? c->tensors[XHAL_SWIGLU_GATE] : c->tensors[XHAL_SWIGLU_UP]);
    const TensorRef<S> out(c->tensors[XHAL_SWIGLU_OUT]);
    const int64_t n = out.size(-1), rows = out.rows(), up_offset = packed ? n : 0;
    kernels::with_gated_activation(c, [&](auto act) {
      using Act = decltype(act);
#pragma omp parallel for schedule(static)
      for (int64_t r = 0; r < rows; ++r) gated_row<E, Act>(gate.row(r), up.row(r) + up_offset, out.row(r), n);
    });
    return XHAL_OK;
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<GatedActivationKernel>(host, "cpu.swiglu", XHAL_OP_SWIGLU);
  register_float_kernels<GatedActivationKernel>(host, "cpu.swiglu_packed", XHAL_OP_SWIGLU_PACKED);
  register_float_kernels<GatedActivationKernel>(host, "cpu.gelu_and_mul", XHAL_OP_GELU_AND_MUL);
  register_float_kernels<GatedActivationKernel>(host, "cpu.gelu_and_mul_packed", XHAL_OP_GELU_AND_MUL_PACKED);
}

}  // namespace xhal::cpu

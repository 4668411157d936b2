// swiglu_backward and swiglu_packed_backward on the CPU: rows in parallel, one pass. With
// s = sigmoid(gate): dup = dout * gate * s and dgate = dout * up * s * (1 + gate * (1 - s)). Each
// element is read before either gradient is written, so gradients may overwrite their inputs.
#include <cmath>

#include "element.hpp"
#include "kernel_registration.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {
namespace {

template <class E>
void swiglu_backward_row(const typename E::Storage* dout, const typename E::Storage* gate,
                         const typename E::Storage* up, typename E::Storage* dgate, typename E::Storage* dup,
                         int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float d = E::load(dout[i]), g = E::load(gate[i]), u = E::load(up[i]);
    const float s = 1.0f / (1.0f + std::exp(-g));
    dgate[i] = E::store(d * u * s * (1.0f + g * (1.0f - s)));
    dup[i] = E::store(d * g * s);
  }
}

// One kernel for both ops: the packed one reads gate and up as the halves of x's rows (slot 1) and
// writes dgate and dup as the halves of dx's (slot 3).
template <class E>
struct SwigluBackwardKernel {
  using S = typename E::Storage;
  static xhal_status run(const xhal_op_call* c, char*, size_t) {
    const bool packed = c->op == XHAL_OP_SWIGLU_PACKED_BACKWARD;
    const TensorRef<const S> dout(c->tensors[XHAL_SWIGLU_BACKWARD_DOUT]), gate(c->tensors[XHAL_SWIGLU_BACKWARD_GATE]);
    const TensorRef<S> dgate(c->tensors[XHAL_SWIGLU_BACKWARD_DGATE]);
    const TensorRef<const S> up(packed ? nullptr : c->tensors[XHAL_SWIGLU_BACKWARD_UP]);
    const TensorRef<S> dup(packed ? nullptr : c->tensors[XHAL_SWIGLU_BACKWARD_DUP]);
    const int64_t n = dout.size(-1), rows = dout.rows();
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      if (packed) {
        swiglu_backward_row<E>(dout.row(r), gate.row(r), gate.row(r) + n, dgate.row(r), dgate.row(r) + n, n);
      } else {
        swiglu_backward_row<E>(dout.row(r), gate.row(r), up.row(r), dgate.row(r), dup.row(r), n);
      }
    }
    return XHAL_OK;
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  static_assert(XHAL_SWIGLU_PACKED_BACKWARD_X == XHAL_SWIGLU_BACKWARD_GATE &&
                XHAL_SWIGLU_PACKED_BACKWARD_DX == XHAL_SWIGLU_BACKWARD_DGATE);
  register_float_kernels<SwigluBackwardKernel>(host, "cpu.swiglu_backward", XHAL_OP_SWIGLU_BACKWARD);
  register_float_kernels<SwigluBackwardKernel>(host, "cpu.swiglu_packed_backward", XHAL_OP_SWIGLU_PACKED_BACKWARD);
}

}  // namespace xhal::cpu

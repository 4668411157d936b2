// Front ends of swiglu_backward and swiglu_packed_backward. Each element's gradients depend on that
// element alone, so a gradient may be written in place over an input of the same shape.

#include "ops/arg_checks.hpp"
#include "ops/op_call.hpp"
#include "xhal/ops.hpp"

namespace xhal::ops {

void swiglu_backward(const TensorView& dout, const TensorView& gate, const TensorView& up, const TensorView& dgate,
                     const TensorView& dup, const Stream* stream) {
  const ArgChecks check(Op::swiglu_backward);
  check.min_rank(XHAL_SWIGLU_BACKWARD_DOUT, dout, 1);
  check.float_dtype(XHAL_SWIGLU_BACKWARD_DOUT, dout);
  const Device device = dgate.device();
  for (const auto& [slot, t] : {std::pair{XHAL_SWIGLU_BACKWARD_GATE, &gate},
                                {XHAL_SWIGLU_BACKWARD_UP, &up},
                                {XHAL_SWIGLU_BACKWARD_DGATE, &dgate},
                                {XHAL_SWIGLU_BACKWARD_DUP, &dup}}) {
    check.min_rank(slot, *t, 1);
    check.dtype(slot, *t, dout.dtype(), " (same as dout)");
    check.same_shape(slot, *t, dout, XHAL_SWIGLU_BACKWARD_DOUT);
  }
  for (const auto& [slot, t] : {std::pair{XHAL_SWIGLU_BACKWARD_DOUT, &dout},
                                {XHAL_SWIGLU_BACKWARD_GATE, &gate},
                                {XHAL_SWIGLU_BACKWARD_UP, &up},
                                {XHAL_SWIGLU_BACKWARD_DUP, &dup}}) {
    check.same_device(slot, *t, device, XHAL_SWIGLU_BACKWARD_DGATE);
  }
  for (const auto& [slot, t] : {std::pair{XHAL_SWIGLU_BACKWARD_DOUT, &dout},
                                {XHAL_SWIGLU_BACKWARD_GATE, &gate},
                                {XHAL_SWIGLU_BACKWARD_UP, &up}}) {
    check.apart_or_in_place(XHAL_SWIGLU_BACKWARD_DGATE, dgate, slot, *t);
    check.apart_or_in_place(XHAL_SWIGLU_BACKWARD_DUP, dup, slot, *t);
  }
  check.apart(XHAL_SWIGLU_BACKWARD_DUP, dup, {{XHAL_SWIGLU_BACKWARD_DGATE, &dgate}});
  OpCall call(Op::swiglu_backward, dout.dtype(), device, stream);
  call.set(XHAL_SWIGLU_BACKWARD_DOUT, dout);
  call.set(XHAL_SWIGLU_BACKWARD_GATE, gate);
  call.set(XHAL_SWIGLU_BACKWARD_UP, up);
  call.set(XHAL_SWIGLU_BACKWARD_DGATE, dgate);
  call.set(XHAL_SWIGLU_BACKWARD_DUP, dup);
  call.run();
}

void swiglu_packed_backward(const TensorView& dout, const TensorView& x, const TensorView& dx, const Stream* stream) {
  const ArgChecks check(Op::swiglu_packed_backward);
  check.min_rank(XHAL_SWIGLU_PACKED_BACKWARD_DOUT, dout, 1);
  check.float_dtype(XHAL_SWIGLU_PACKED_BACKWARD_DOUT, dout);
  const int rank = dout.ndim();
  for (const auto& [slot, t] : {std::pair{XHAL_SWIGLU_PACKED_BACKWARD_X, &x}, {XHAL_SWIGLU_PACKED_BACKWARD_DX, &dx}}) {
    check.tensor(slot, *t, rank);
    check.dtype(slot, *t, dout.dtype(), " (same as dout)");
    for (int d = 0; d + 1 < rank; ++d) check.dim(slot, *t, d, dout.size(d), "same as dout");
    // dout's bytes fit in int64 (min_rank checked it), so twice its last dim does too.
    check.dim(slot, *t, rank - 1, 2 * dout.size(-1), "twice the last dim of dout (gate and up halves)");
  }
  check.same_device(XHAL_SWIGLU_PACKED_BACKWARD_DOUT, dout, dx.device(), XHAL_SWIGLU_PACKED_BACKWARD_DX);
  check.same_device(XHAL_SWIGLU_PACKED_BACKWARD_X, x, dx.device(), XHAL_SWIGLU_PACKED_BACKWARD_DX);
  check.apart_or_in_place(XHAL_SWIGLU_PACKED_BACKWARD_DX, dx, XHAL_SWIGLU_PACKED_BACKWARD_X, x);
  check.apart(XHAL_SWIGLU_PACKED_BACKWARD_DX, dx, {{XHAL_SWIGLU_PACKED_BACKWARD_DOUT, &dout}});
  OpCall call(Op::swiglu_packed_backward, dout.dtype(), dx.device(), stream);
  call.set(XHAL_SWIGLU_PACKED_BACKWARD_DOUT, dout);
  call.set(XHAL_SWIGLU_PACKED_BACKWARD_X, x);
  call.set(XHAL_SWIGLU_PACKED_BACKWARD_DX, dx);
  call.run();
}

}  // namespace xhal::ops

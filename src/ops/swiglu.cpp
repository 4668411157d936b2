// Front ends of swiglu and swiglu_packed.
#include <fmt/format.h>

#include "ops/arg_checks.hpp"
#include "ops/op_call.hpp"
#include "xhal/ops.hpp"

namespace xhal::ops {

void swiglu(const TensorView& gate, const TensorView& up, const TensorView& out, const Stream* stream) {
  const ArgChecks check(Op::swiglu);
  check.min_rank(XHAL_SWIGLU_GATE, gate, 1);
  check.float_dtype(XHAL_SWIGLU_GATE, gate);
  check.min_rank(XHAL_SWIGLU_UP, up, 1);
  check.dtype(XHAL_SWIGLU_UP, up, gate.dtype(), " (same as gate)");
  check.same_shape(XHAL_SWIGLU_UP, up, gate, XHAL_SWIGLU_GATE);
  check.min_rank(XHAL_SWIGLU_OUT, out, 1);
  check.dtype(XHAL_SWIGLU_OUT, out, gate.dtype(), " (same as gate)");
  check.same_shape(XHAL_SWIGLU_OUT, out, gate, XHAL_SWIGLU_GATE);
  check.same_device(XHAL_SWIGLU_GATE, gate, out.device(), XHAL_SWIGLU_OUT);
  check.same_device(XHAL_SWIGLU_UP, up, out.device(), XHAL_SWIGLU_OUT);
  check.apart_or_in_place(XHAL_SWIGLU_OUT, out, XHAL_SWIGLU_GATE, gate);
  check.apart_or_in_place(XHAL_SWIGLU_OUT, out, XHAL_SWIGLU_UP, up);
  OpCall call(Op::swiglu, gate.dtype(), out.device(), stream);
  call.set(XHAL_SWIGLU_GATE, gate);
  call.set(XHAL_SWIGLU_UP, up);
  call.set(XHAL_SWIGLU_OUT, out);
  call.run();
}

void swiglu_packed(const TensorView& x, const TensorView& out, const Stream* stream) {
  const ArgChecks check(Op::swiglu_packed);
  check.min_rank(XHAL_SWIGLU_PACKED_X, x, 1);
  check.float_dtype(XHAL_SWIGLU_PACKED_X, x);
  if (x.size(-1) % 2 != 0) {
    check.fail(XHAL_SWIGLU_PACKED_X, "an even last dim (gate and up halves)", fmt::format("{}", x.size(-1)));
  }
  check.tensor(XHAL_SWIGLU_OUT, out, x.ndim());
  check.dtype(XHAL_SWIGLU_OUT, out, x.dtype(), " (same as x)");
  for (int d = 0; d + 1 < x.ndim(); ++d) check.dim(XHAL_SWIGLU_OUT, out, d, x.size(d), "same as x");
  check.dim(XHAL_SWIGLU_OUT, out, x.ndim() - 1, x.size(-1) / 2, "half the last dim of x");
  check.same_device(XHAL_SWIGLU_PACKED_X, x, out.device(), XHAL_SWIGLU_OUT);
  check.apart(XHAL_SWIGLU_OUT, out, {{XHAL_SWIGLU_PACKED_X, &x}});
  OpCall call(Op::swiglu_packed, x.dtype(), out.device(), stream);
  call.set(XHAL_SWIGLU_PACKED_X, x);
  call.set(XHAL_SWIGLU_PACKED_OUT, out);
  call.run();
}

}  // namespace xhal::ops

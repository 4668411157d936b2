// Front ends of swiglu and swiglu_packed.
#include <fmt/format.h>

#include "ops/arg_checks.hpp"
#include "ops/op_call.hpp"
#include "xhal/ops.hpp"

namespace xhal::ops {

void swiglu(const TensorView& gate, const TensorView& up, const TensorView& out, const Stream* stream) {
  const ArgChecks check(Op::swiglu);
  check.min_rank("gate", gate, 1);
  check.float_dtype("gate", gate);
  check.min_rank("up", up, 1);
  check.dtype("up", up, gate.dtype(), " (same as gate)");
  check.same_shape("up", up, gate, "gate");
  check.min_rank("out", out, 1);
  check.dtype("out", out, gate.dtype(), " (same as gate)");
  check.same_shape("out", out, gate, "gate");
  check.same_device("gate", gate, out.device(), "out");
  check.same_device("up", up, out.device(), "out");
  check.apart_or_in_place("out", out, "gate", gate);
  check.apart_or_in_place("out", out, "up", up);
  OpCall call(Op::swiglu, gate.dtype(), out.device(), stream);
  call.set(XHAL_SWIGLU_GATE, gate);
  call.set(XHAL_SWIGLU_UP, up);
  call.set(XHAL_SWIGLU_OUT, out);
  call.run();
}

void swiglu_packed(const TensorView& x, const TensorView& out, const Stream* stream) {
  const ArgChecks check(Op::swiglu_packed);
  check.min_rank("x", x, 1);
  check.float_dtype("x", x);
  if (x.size(-1) % 2 != 0) {
    check.fail("x", "an even last dim (gate and up halves)", fmt::format("{}", x.size(-1)));
  }
  check.tensor("out", out, x.ndim());
  check.dtype("out", out, x.dtype(), " (same as x)");
  for (int d = 0; d + 1 < x.ndim(); ++d) check.dim("out", out, d, x.size(d), "same as x");
  check.dim("out", out, x.ndim() - 1, x.size(-1) / 2, "half the last dim of x");
  check.same_device("x", x, out.device(), "out");
  check.apart("out", out, {{"x", &x}});
  OpCall call(Op::swiglu_packed, x.dtype(), out.device(), stream);
  call.set(XHAL_SWIGLU_PACKED_X, x);
  call.set(XHAL_SWIGLU_PACKED_OUT, out);
  call.run();
}

}  // namespace xhal::ops

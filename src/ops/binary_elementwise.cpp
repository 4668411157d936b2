// Front ends of add and mul: x[..., N] with y of x's shape or y[N] (one row for every row of x),
// out of x's shape; out may be x, or y when y has x's shape.

#include "ops/arg_checks.hpp"
#include "ops/op_call.hpp"
#include "xhal/ops.hpp"

namespace xhal::ops {
namespace {

void run_binary(Op op, const TensorView& x, const TensorView& y, const TensorView& out, const Stream* stream) {
  static_assert(XHAL_MUL_X == XHAL_ADD_X && XHAL_MUL_Y == XHAL_ADD_Y && XHAL_MUL_OUT == XHAL_ADD_OUT);
  const ArgChecks check(op);
  check.min_rank(XHAL_ADD_X, x, 1);
  check.float_dtype(XHAL_ADD_X, x);
  check.min_rank(XHAL_ADD_Y, y, 1);
  check.dtype(XHAL_ADD_Y, y, x.dtype(), " (same as x)");
  const bool row = y.ndim() == 1 && x.ndim() > 1;
  if (row) {
    check.dim(XHAL_ADD_Y, y, 0, x.size(-1), "last dim of x (a row for every row of x)");
  } else {
    check.same_shape(XHAL_ADD_Y, y, x, XHAL_ADD_X);
  }
  check.min_rank(XHAL_ADD_OUT, out, 1);
  check.dtype(XHAL_ADD_OUT, out, x.dtype(), " (same as x)");
  check.same_shape(XHAL_ADD_OUT, out, x, XHAL_ADD_X);
  check.same_device(XHAL_ADD_X, x, out.device(), XHAL_ADD_OUT);
  check.same_device(XHAL_ADD_Y, y, out.device(), XHAL_ADD_OUT);
  check.apart_or_in_place(XHAL_ADD_OUT, out, XHAL_ADD_X, x);
  if (row) {
    check.apart(XHAL_ADD_OUT, out, {{XHAL_ADD_Y, &y}});
  } else {
    check.apart_or_in_place(XHAL_ADD_OUT, out, XHAL_ADD_Y, y);
  }
  OpCall call(op, x.dtype(), out.device(), stream);
  call.set(XHAL_ADD_X, x);
  call.set(XHAL_ADD_Y, y);
  call.set(XHAL_ADD_OUT, out);
  call.run();
}

}  // namespace

void add(const TensorView& x, const TensorView& y, const TensorView& out, const Stream* stream) {
  run_binary(Op::add, x, y, out, stream);
}

void mul(const TensorView& x, const TensorView& y, const TensorView& out, const Stream* stream) {
  run_binary(Op::mul, x, y, out, stream);
}

}  // namespace xhal::ops

// Front end of linear.
#include "ops/arg_checks.hpp"
#include "ops/op_call.hpp"
#include "xhal/ops.hpp"

namespace xhal::ops {

void linear(const TensorView& x, const TensorView& w, const TensorView* bias, const TensorView& out,
            const Stream* stream) {
  const ArgChecks check(Op::linear);
  check.tensor("x", x, 2);
  check.float_dtype("x", x);
  const int64_t M = x.size(0), K = x.size(1);
  check.tensor("w", w, 2);
  check.dtype("w", w, x.dtype(), " (same as x)");
  check.dim("w", w, 1, K, "in features of x");
  const int64_t N = w.size(0);
  check.tensor("out", out, 2);
  check.dtype("out", out, x.dtype(), " (same as x)");
  check.dim("out", out, 0, M, "rows of x");
  check.dim("out", out, 1, N, "out features of w");
  check.same_device("x", x, out.device(), "out");
  check.same_device("w", w, out.device(), "out");
  if (bias != nullptr) {
    check.tensor("bias", *bias, 1);
    check.dtype("bias", *bias, x.dtype(), " (same as x)");
    check.dim("bias", *bias, 0, N, "out features of w");
    check.same_device("bias", *bias, out.device(), "out");
  }
  check.apart("out", out, {{"x", &x}, {"w", &w}, {"bias", bias}});
  OpCall call(Op::linear, x.dtype(), out.device(), stream);
  call.set(XHAL_LINEAR_X, x);
  call.set(XHAL_LINEAR_W, w);
  call.set(XHAL_LINEAR_BIAS, bias);
  call.set(XHAL_LINEAR_OUT, out);
  call.run();
}

}  // namespace xhal::ops

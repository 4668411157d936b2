// Front end of linear.
#include "ops/arg_checks.hpp"
#include "ops/op_call.hpp"
#include "xhal/ops.hpp"

namespace xhal::ops {

void linear(const TensorView& x, const TensorView& w, const TensorView* bias, const TensorView& out,
            const Stream* stream) {
  const ArgChecks check(Op::linear);
  check.tensor(XHAL_LINEAR_X, x, 2);
  check.float_dtype(XHAL_LINEAR_X, x);
  const int64_t M = x.size(0), K = x.size(1);
  check.tensor(XHAL_LINEAR_W, w, 2);
  check.dtype(XHAL_LINEAR_W, w, x.dtype(), " (same as x)");
  check.dim(XHAL_LINEAR_W, w, 1, K, "in features of x");
  const int64_t N = w.size(0);
  check.tensor(XHAL_LINEAR_OUT, out, 2);
  check.dtype(XHAL_LINEAR_OUT, out, x.dtype(), " (same as x)");
  check.dim(XHAL_LINEAR_OUT, out, 0, M, "rows of x");
  check.dim(XHAL_LINEAR_OUT, out, 1, N, "out features of w");
  check.same_device(XHAL_LINEAR_X, x, out.device(), XHAL_LINEAR_OUT);
  check.same_device(XHAL_LINEAR_W, w, out.device(), XHAL_LINEAR_OUT);
  if (bias != nullptr) {
    check.tensor(XHAL_LINEAR_BIAS, *bias, 1);
    check.dtype(XHAL_LINEAR_BIAS, *bias, x.dtype(), " (same as x)");
    check.dim(XHAL_LINEAR_BIAS, *bias, 0, N, "out features of w");
    check.same_device(XHAL_LINEAR_BIAS, *bias, out.device(), XHAL_LINEAR_OUT);
  }
  check.apart(XHAL_LINEAR_OUT, out, {{XHAL_LINEAR_X, &x}, {XHAL_LINEAR_W, &w}, {XHAL_LINEAR_BIAS, bias}});
  OpCall call(Op::linear, x.dtype(), out.device(), stream);
  call.set(XHAL_LINEAR_X, x);
  call.set(XHAL_LINEAR_W, w);
  call.set(XHAL_LINEAR_BIAS, bias);
  call.set(XHAL_LINEAR_OUT, out);
  call.run();
}

}  // namespace xhal::ops

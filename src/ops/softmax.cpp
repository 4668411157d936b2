// Front end of softmax: x[..., N] rows (any strides) into out of the same shape and dtype, which
// may be x itself.
#include "ops/arg_checks.hpp"
#include "ops/op_call.hpp"
#include "xhal/ops.hpp"

namespace xhal::ops {

void softmax(const TensorView& x, const TensorView& out, const Stream* stream) {
  const ArgChecks check(Op::softmax);
  check.min_rank(XHAL_SOFTMAX_X, x, 1);
  check.float_dtype(XHAL_SOFTMAX_X, x);
  check.min_rank(XHAL_SOFTMAX_OUT, out, 1);
  check.dtype(XHAL_SOFTMAX_OUT, out, x.dtype(), " (same as x)");
  check.same_shape(XHAL_SOFTMAX_OUT, out, x, XHAL_SOFTMAX_X);
  check.same_device(XHAL_SOFTMAX_X, x, out.device(), XHAL_SOFTMAX_OUT);
  check.apart_or_in_place(XHAL_SOFTMAX_OUT, out, XHAL_SOFTMAX_X, x);
  OpCall call(Op::softmax, x.dtype(), out.device(), stream);
  call.set(XHAL_SOFTMAX_X, x);
  call.set(XHAL_SOFTMAX_OUT, out);
  call.run();
}

}  // namespace xhal::ops

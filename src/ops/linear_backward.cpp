// Front end of linear_backward.
#include <tuple>

#include "ops/arg_checks.hpp"
#include "ops/op_call.hpp"
#include "xhal/ops.hpp"

namespace xhal::ops {

void linear_backward(const TensorView& dout, const TensorView& x, const TensorView& w, const TensorView* dx,
                     const TensorView* dw, const TensorView* dbias, const Stream* stream) {
  const ArgChecks check(Op::linear_backward);
  check.tensor(XHAL_LINEAR_BACKWARD_DOUT, dout, 2);
  check.float_dtype(XHAL_LINEAR_BACKWARD_DOUT, dout);
  const int64_t M = dout.size(0), N = dout.size(1);
  const DType dtype = dout.dtype();
  const Device device = dout.device();
  check.tensor(XHAL_LINEAR_BACKWARD_X, x, 2);
  check.dtype(XHAL_LINEAR_BACKWARD_X, x, dtype, " (same as dout)");
  check.dim(XHAL_LINEAR_BACKWARD_X, x, 0, M, "rows of dout");
  const int64_t K = x.size(1);
  check.tensor(XHAL_LINEAR_BACKWARD_W, w, 2);
  check.dtype(XHAL_LINEAR_BACKWARD_W, w, dtype, " (same as dout)");
  check.dim(XHAL_LINEAR_BACKWARD_W, w, 0, N, "out features of dout");
  check.dim(XHAL_LINEAR_BACKWARD_W, w, 1, K, "in features of x");
  if (dx == nullptr && dw == nullptr && dbias == nullptr) {
    check.fail(XHAL_LINEAR_BACKWARD_DX, "at least one of dx, dw and dbias to compute", "none");
  }
  // Each gradient has its forward tensor's shape.
  for (const auto& [slot, grad, like, like_slot] :
       {std::tuple{XHAL_LINEAR_BACKWARD_DX, dx, &x, XHAL_LINEAR_BACKWARD_X},
        std::tuple{XHAL_LINEAR_BACKWARD_DW, dw, &w, XHAL_LINEAR_BACKWARD_W}}) {
    if (grad == nullptr) continue;
    check.tensor(slot, *grad, 2);
    check.dtype(slot, *grad, dtype, " (same as dout)");
    check.same_shape(slot, *grad, *like, like_slot);
  }
  if (dbias != nullptr) {
    check.tensor(XHAL_LINEAR_BACKWARD_DBIAS, *dbias, 1);
    check.dtype(XHAL_LINEAR_BACKWARD_DBIAS, *dbias, dtype, " (same as dout)");
    check.dim(XHAL_LINEAR_BACKWARD_DBIAS, *dbias, 0, N, "out features of dout");
  }
  for (const auto& [slot, t] : {std::pair{XHAL_LINEAR_BACKWARD_X, &x},
                                {XHAL_LINEAR_BACKWARD_W, &w},
                                {XHAL_LINEAR_BACKWARD_DX, dx},
                                {XHAL_LINEAR_BACKWARD_DW, dw},
                                {XHAL_LINEAR_BACKWARD_DBIAS, dbias}}) {
    if (t != nullptr) check.same_device(slot, *t, device, XHAL_LINEAR_BACKWARD_DOUT);
  }
  const std::initializer_list<std::pair<Arg, const TensorView*>> inputs = {
      {XHAL_LINEAR_BACKWARD_DOUT, &dout}, {XHAL_LINEAR_BACKWARD_X, &x}, {XHAL_LINEAR_BACKWARD_W, &w}};
  if (dx != nullptr) {
    check.apart(XHAL_LINEAR_BACKWARD_DX, *dx, inputs);
    check.apart(XHAL_LINEAR_BACKWARD_DX, *dx, {{XHAL_LINEAR_BACKWARD_DW, dw}, {XHAL_LINEAR_BACKWARD_DBIAS, dbias}});
  }
  if (dw != nullptr) {
    check.apart(XHAL_LINEAR_BACKWARD_DW, *dw, inputs);
    check.apart(XHAL_LINEAR_BACKWARD_DW, *dw, {{XHAL_LINEAR_BACKWARD_DBIAS, dbias}});
  }
  if (dbias != nullptr) check.apart(XHAL_LINEAR_BACKWARD_DBIAS, *dbias, inputs);
  OpCall call(Op::linear_backward, dtype, device, stream);
  call.set(XHAL_LINEAR_BACKWARD_DOUT, dout);
  call.set(XHAL_LINEAR_BACKWARD_X, x);
  call.set(XHAL_LINEAR_BACKWARD_W, w);
  call.set(XHAL_LINEAR_BACKWARD_DX, dx);
  call.set(XHAL_LINEAR_BACKWARD_DW, dw);
  call.set(XHAL_LINEAR_BACKWARD_DBIAS, dbias);
  call.run();
}

}  // namespace xhal::ops

// Front ends of rms_norm_backward and fused_add_rms_norm_backward.
#include <cmath>

#include "core/text_format.hpp"
#include "ops/arg_checks.hpp"
#include "ops/op_call.hpp"
#include "xhal/ops.hpp"

namespace xhal::ops {
namespace {

// The arguments both ops share (their slots are the same: x is the fused op's residual).
void check_norm_backward_args(const ArgChecks& check, const TensorView& dout, const TensorView& x,
                              const TensorView& weight, float eps, const TensorView& dx, const TensorView& dweight) {
  check.min_rank(XHAL_RMS_NORM_BACKWARD_DOUT, dout, 1);
  check.float_dtype(XHAL_RMS_NORM_BACKWARD_DOUT, dout);
  check.min_rank(XHAL_RMS_NORM_BACKWARD_X, x, 1);
  check.dtype(XHAL_RMS_NORM_BACKWARD_X, x, dout.dtype(), " (same as dout)");
  check.same_shape(XHAL_RMS_NORM_BACKWARD_X, x, dout, XHAL_RMS_NORM_BACKWARD_DOUT);
  check.tensor(XHAL_RMS_NORM_BACKWARD_WEIGHT, weight, 1);
  check.dtype(XHAL_RMS_NORM_BACKWARD_WEIGHT, weight, dout.dtype(), " (same as dout)");
  check.dim(XHAL_RMS_NORM_BACKWARD_WEIGHT, weight, 0, dout.size(-1), "last dim of dout");
  check.min_rank(XHAL_RMS_NORM_BACKWARD_DX, dx, 1);
  check.dtype(XHAL_RMS_NORM_BACKWARD_DX, dx, dout.dtype(), " (same as dout)");
  check.same_shape(XHAL_RMS_NORM_BACKWARD_DX, dx, dout, XHAL_RMS_NORM_BACKWARD_DOUT);
  check.tensor(XHAL_RMS_NORM_BACKWARD_DWEIGHT, dweight, 1);
  check.dtype(XHAL_RMS_NORM_BACKWARD_DWEIGHT, dweight, dout.dtype(), " (same as dout)");
  check.dim(XHAL_RMS_NORM_BACKWARD_DWEIGHT, dweight, 0, dout.size(-1), "last dim of dout");
  if (!(eps >= 0) || !std::isfinite(eps)) check.fail("eps", "a finite number >= 0", format_text("{}", eps));
  const Device device = dx.device();
  check.same_device(XHAL_RMS_NORM_BACKWARD_DOUT, dout, device, XHAL_RMS_NORM_BACKWARD_DX);
  check.same_device(XHAL_RMS_NORM_BACKWARD_X, x, device, XHAL_RMS_NORM_BACKWARD_DX);
  check.same_device(XHAL_RMS_NORM_BACKWARD_WEIGHT, weight, device, XHAL_RMS_NORM_BACKWARD_DX);
  check.same_device(XHAL_RMS_NORM_BACKWARD_DWEIGHT, dweight, device, XHAL_RMS_NORM_BACKWARD_DX);
  // A row's dx needs the whole row of dout and x: neither may be overwritten while it is read.
  check.apart(XHAL_RMS_NORM_BACKWARD_DX, dx,
              {{XHAL_RMS_NORM_BACKWARD_DOUT, &dout},
               {XHAL_RMS_NORM_BACKWARD_X, &x},
               {XHAL_RMS_NORM_BACKWARD_WEIGHT, &weight},
               {XHAL_RMS_NORM_BACKWARD_DWEIGHT, &dweight}});
  check.apart(
      XHAL_RMS_NORM_BACKWARD_DWEIGHT, dweight,
      {{XHAL_RMS_NORM_BACKWARD_DOUT, &dout}, {XHAL_RMS_NORM_BACKWARD_X, &x}, {XHAL_RMS_NORM_BACKWARD_WEIGHT, &weight}});
}

void set_norm_backward_tensors(OpCall& call, const TensorView& dout, const TensorView& x, const TensorView& weight,
                               const TensorView& dx, const TensorView& dweight) {
  call.set(XHAL_RMS_NORM_BACKWARD_DOUT, dout);
  call.set(XHAL_RMS_NORM_BACKWARD_X, x);
  call.set(XHAL_RMS_NORM_BACKWARD_WEIGHT, weight);
  call.set(XHAL_RMS_NORM_BACKWARD_DX, dx);
  call.set(XHAL_RMS_NORM_BACKWARD_DWEIGHT, dweight);
}

}  // namespace

void rms_norm_backward(const TensorView& dout, const TensorView& x, const TensorView& weight, float eps,
                       const TensorView& dx, const TensorView& dweight, const Stream* stream) {
  const ArgChecks check(Op::rms_norm_backward);
  check_norm_backward_args(check, dout, x, weight, eps, dx, dweight);
  OpCall call(Op::rms_norm_backward, dout.dtype(), dx.device(), stream);
  const xhal_norm_op_params op_params{sizeof op_params, eps};
  call.set_params(op_params);
  set_norm_backward_tensors(call, dout, x, weight, dx, dweight);
  call.run();
}

void fused_add_rms_norm_backward(const TensorView& dout, const TensorView& residual, const TensorView& weight,
                                 float eps, const TensorView& dresidual, const TensorView& dx,
                                 const TensorView& dweight, const Stream* stream) {
  const ArgChecks check(Op::fused_add_rms_norm_backward);
  // dx may be dresidual itself (both receive the same values): checked against the others alone.
  check_norm_backward_args(check, dout, residual, weight, eps, dx, dweight);
  constexpr int kDresidual = XHAL_FUSED_ADD_RMS_NORM_BACKWARD_DRESIDUAL;
  check.min_rank(kDresidual, dresidual, 1);
  check.dtype(kDresidual, dresidual, dout.dtype(), " (same as dout)");
  check.same_shape(kDresidual, dresidual, dout, XHAL_RMS_NORM_BACKWARD_DOUT);
  check.same_device(kDresidual, dresidual, dx.device(), XHAL_RMS_NORM_BACKWARD_DX);
  check.apart_or_in_place(XHAL_RMS_NORM_BACKWARD_DX, dx, kDresidual, dresidual);
  check.apart(kDresidual, dresidual,
              {{XHAL_RMS_NORM_BACKWARD_DOUT, &dout},
               {XHAL_FUSED_ADD_RMS_NORM_BACKWARD_RESIDUAL, &residual},
               {XHAL_RMS_NORM_BACKWARD_WEIGHT, &weight},
               {XHAL_RMS_NORM_BACKWARD_DWEIGHT, &dweight}});
  OpCall call(Op::fused_add_rms_norm_backward, dout.dtype(), dx.device(), stream);
  const xhal_norm_op_params op_params{sizeof op_params, eps};
  call.set_params(op_params);
  set_norm_backward_tensors(call, dout, residual, weight, dx, dweight);
  call.set(kDresidual, dresidual);
  call.run();
}

}  // namespace xhal::ops

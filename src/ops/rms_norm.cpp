// Front ends of rms_norm and fused_add_rms_norm.
#include <cmath>

#include <fmt/format.h>

#include "ops/arg_checks.hpp"
#include "ops/op_call.hpp"
#include "xhal/ops.hpp"

namespace xhal::ops {
namespace {

void check_norm_args(const ArgChecks& check, const TensorView& x, const TensorView& weight, float eps,
                     const TensorView& out) {
  check.min_rank("x", x, 1);
  check.float_dtype("x", x);
  check.tensor("weight", weight, 1);
  check.dtype("weight", weight, x.dtype(), " (same as x)");
  check.dim("weight", weight, 0, x.size(-1), "last dim of x");
  check.min_rank("out", out, 1);
  check.dtype("out", out, x.dtype(), " (same as x)");
  check.same_shape("out", out, x, "x");
  if (!(eps >= 0) || !std::isfinite(eps)) check.fail("eps", "a finite number >= 0", fmt::format("{}", eps));
  check.same_device("x", x, out.device(), "out");
  check.same_device("weight", weight, out.device(), "out");
  check.apart_or_in_place("out", out, "x", x);
  check.apart("out", out, {{"weight", &weight}});
}

}  // namespace

void rms_norm(const TensorView& x, const TensorView& weight, float eps, const TensorView& out, const Stream* stream) {
  const ArgChecks check(Op::rms_norm);
  check_norm_args(check, x, weight, eps, out);
  OpCall call(Op::rms_norm, x.dtype(), out.device(), stream);
  const xhal_norm_op_params op_params{sizeof op_params, eps};
  call.set_params(op_params);
  call.set(XHAL_RMS_NORM_X, x);
  call.set(XHAL_RMS_NORM_WEIGHT, weight);
  call.set(XHAL_RMS_NORM_OUT, out);
  call.run();
}

void fused_add_rms_norm(const TensorView& x, const TensorView& residual, const TensorView& weight, float eps,
                        const TensorView& out, const Stream* stream) {
  const ArgChecks check(Op::fused_add_rms_norm);
  check_norm_args(check, x, weight, eps, out);
  check.min_rank("residual", residual, 1);
  check.dtype("residual", residual, x.dtype(), " (same as x)");
  check.same_shape("residual", residual, x, "x");
  check.same_device("residual", residual, out.device(), "out");
  check.apart("out", out, {{"residual", &residual}});
  check.apart("residual", residual, {{"x", &x}, {"weight", &weight}});
  OpCall call(Op::fused_add_rms_norm, x.dtype(), out.device(), stream);
  const xhal_norm_op_params op_params{sizeof op_params, eps};
  call.set_params(op_params);
  call.set(XHAL_RMS_NORM_X, x);
  call.set(XHAL_RMS_NORM_WEIGHT, weight);
  call.set(XHAL_RMS_NORM_OUT, out);
  call.set(XHAL_FUSED_ADD_RMS_NORM_RESIDUAL, residual);
  call.run();
}

}  // namespace xhal::ops

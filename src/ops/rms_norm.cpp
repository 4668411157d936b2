// Front ends of rms_norm, fused_add_rms_norm and layer_norm (which shares rms_norm's slots and checks).
#include <cmath>

#include "core/text_format.hpp"
#include "ops/arg_checks.hpp"
#include "ops/op_call.hpp"
#include "xhal/ops.hpp"

namespace xhal::ops {
namespace {

// A [N] tensor of per-column factors (weight, bias) for the rows of x[..., N].
void check_per_column(const ArgChecks& check, int slot, const TensorView& t, const TensorView& x,
                      const TensorView& out) {
  check.tensor(slot, t, 1);
  check.dtype(slot, t, x.dtype(), " (same as x)");
  check.dim(slot, t, 0, x.size(-1), "last dim of x");
  check.same_device(slot, t, out.device(), XHAL_RMS_NORM_OUT);
  check.apart(XHAL_RMS_NORM_OUT, out, {{slot, &t}});
}

void check_norm_args(const ArgChecks& check, const TensorView& x, const TensorView& weight, float eps,
                     const TensorView& out) {
  check.min_rank(XHAL_RMS_NORM_X, x, 1);
  check.float_dtype(XHAL_RMS_NORM_X, x);
  check.min_rank(XHAL_RMS_NORM_OUT, out, 1);
  check.dtype(XHAL_RMS_NORM_OUT, out, x.dtype(), " (same as x)");
  check.same_shape(XHAL_RMS_NORM_OUT, out, x, XHAL_RMS_NORM_X);
  if (!(eps >= 0) || !std::isfinite(eps)) check.fail("eps", "a finite number >= 0", format_text("{}", eps));
  check.same_device(XHAL_RMS_NORM_X, x, out.device(), XHAL_RMS_NORM_OUT);
  check.apart_or_in_place(XHAL_RMS_NORM_OUT, out, XHAL_RMS_NORM_X, x);
  check_per_column(check, XHAL_RMS_NORM_WEIGHT, weight, x, out);
}

// Runs a norm op: eps and the x, weight and out slots every norm shares, then `more(call)` sets the
// op's own tensors.
template <class More>
void run_norm(Op op, const TensorView& x, const TensorView& weight, float eps, const TensorView& out,
              const Stream* stream, More&& more) {
  OpCall call(op, x.dtype(), out.device(), stream);
  const xhal_norm_op_params op_params{sizeof op_params, eps};
  call.set_params(op_params);
  call.set(XHAL_RMS_NORM_X, x);
  call.set(XHAL_RMS_NORM_WEIGHT, weight);
  call.set(XHAL_RMS_NORM_OUT, out);
  more(call);
  call.run();
}

}  // namespace

void rms_norm(const TensorView& x, const TensorView& weight, float eps, const TensorView& out, const Stream* stream) {
  const ArgChecks check(Op::rms_norm);
  check_norm_args(check, x, weight, eps, out);
  run_norm(Op::rms_norm, x, weight, eps, out, stream, [](OpCall&) {});
}

void fused_add_rms_norm(const TensorView& x, const TensorView& residual, const TensorView& weight, float eps,
                        const TensorView& out, const Stream* stream) {
  const ArgChecks check(Op::fused_add_rms_norm);
  check_norm_args(check, x, weight, eps, out);
  check.min_rank(XHAL_FUSED_ADD_RMS_NORM_RESIDUAL, residual, 1);
  check.dtype(XHAL_FUSED_ADD_RMS_NORM_RESIDUAL, residual, x.dtype(), " (same as x)");
  check.same_shape(XHAL_FUSED_ADD_RMS_NORM_RESIDUAL, residual, x, XHAL_RMS_NORM_X);
  check.same_device(XHAL_FUSED_ADD_RMS_NORM_RESIDUAL, residual, out.device(), XHAL_RMS_NORM_OUT);
  check.apart(XHAL_RMS_NORM_OUT, out, {{XHAL_FUSED_ADD_RMS_NORM_RESIDUAL, &residual}});
  check.apart(XHAL_FUSED_ADD_RMS_NORM_RESIDUAL, residual, {{XHAL_RMS_NORM_X, &x}, {XHAL_RMS_NORM_WEIGHT, &weight}});
  run_norm(Op::fused_add_rms_norm, x, weight, eps, out, stream,
           [&](OpCall& call) { call.set(XHAL_FUSED_ADD_RMS_NORM_RESIDUAL, residual); });
}

void layer_norm(const TensorView& x, const TensorView& weight, const TensorView* bias, float eps, const TensorView& out,
                const Stream* stream) {
  static_assert(XHAL_LAYER_NORM_X == XHAL_RMS_NORM_X && XHAL_LAYER_NORM_WEIGHT == XHAL_RMS_NORM_WEIGHT &&
                XHAL_LAYER_NORM_OUT == XHAL_RMS_NORM_OUT);
  const ArgChecks check(Op::layer_norm);
  check_norm_args(check, x, weight, eps, out);
  if (bias != nullptr) check_per_column(check, XHAL_LAYER_NORM_BIAS, *bias, x, out);
  run_norm(Op::layer_norm, x, weight, eps, out, stream, [&](OpCall& call) {
    if (bias != nullptr) call.set(XHAL_LAYER_NORM_BIAS, *bias);
  });
}

}  // namespace xhal::ops

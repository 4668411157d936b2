// Front ends of adamw_step and global_grad_norm: flat (rank-1) buffers, the optimizer's layout of
// all parameters of one dtype in one tensor.
#include <cmath>

#include <fmt/format.h>

#include "ops/arg_checks.hpp"
#include "ops/op_call.hpp"
#include "xhal/ops.hpp"

namespace xhal::ops {
namespace {

// A one-element f32 tensor on `device` (a scalar that lives there).
void check_scalar(const ArgChecks& check, int slot, const TensorView& t, Device device, int device_slot) {
  check.tensor(slot, t, 1, false);
  check.dtype(slot, t, DType::f32, " (a device scalar)");
  check.dim(slot, t, 0, 1, "one element");
  check.same_device(slot, t, device, device_slot);
}

}  // namespace

void adamw_step(const TensorView& param, const TensorView& grad, const TensorView& exp_avg,
                const TensorView& exp_avg_sq, const TensorView* master, const TensorView* lr,
                const TensorView* grad_scale, const AdamWParams& params, const Stream* stream) {
  const ArgChecks check(Op::adamw_step);
  check.tensor(XHAL_ADAMW_STEP_PARAM, param, 1);
  check.float_dtype(XHAL_ADAMW_STEP_PARAM, param);
  const Device device = param.device();
  check.tensor(XHAL_ADAMW_STEP_GRAD, grad, 1);
  check.dtype(XHAL_ADAMW_STEP_GRAD, grad, param.dtype(), " (same as param)");
  check.same_shape(XHAL_ADAMW_STEP_GRAD, grad, param, XHAL_ADAMW_STEP_PARAM);
  check.same_device(XHAL_ADAMW_STEP_GRAD, grad, device, XHAL_ADAMW_STEP_PARAM);
  for (const auto& [slot, t] : {std::pair{XHAL_ADAMW_STEP_EXP_AVG, &exp_avg},
                                {XHAL_ADAMW_STEP_EXP_AVG_SQ, &exp_avg_sq},
                                {XHAL_ADAMW_STEP_MASTER, master}}) {
    if (t == nullptr) continue;
    check.tensor(slot, *t, 1);
    check.dtype(slot, *t, DType::f32, " (optimizer state is f32)");
    check.same_shape(slot, *t, param, XHAL_ADAMW_STEP_PARAM);
    check.same_device(slot, *t, device, XHAL_ADAMW_STEP_PARAM);
  }
  if (lr != nullptr) check_scalar(check, XHAL_ADAMW_STEP_LR, *lr, device, XHAL_ADAMW_STEP_PARAM);
  if (grad_scale != nullptr)
    check_scalar(check, XHAL_ADAMW_STEP_GRAD_SCALE, *grad_scale, device, XHAL_ADAMW_STEP_PARAM);
  auto in_range = [&](const char* name, float v, float lo, float hi, const char* expected) {
    if (!(v >= lo && v <= hi) || !std::isfinite(v)) check.fail(name, expected, fmt::format("{}", v));
  };
  if (lr == nullptr) in_range("lr", params.lr, 0.0f, INFINITY, "a finite number >= 0");
  in_range("beta1", params.beta1, 0.0f, 0.999999f, "a number in [0, 1)");
  in_range("beta2", params.beta2, 0.0f, 0.999999f, "a number in [0, 1)");
  in_range("eps", params.eps, 0.0f, INFINITY, "a finite number >= 0");
  in_range("weight_decay", params.weight_decay, 0.0f, INFINITY, "a finite number >= 0");
  if (params.step < 1) check.fail("step", "the update's number, from 1", fmt::format("{}", params.step));
  // Every buffer is updated in place while the others are read.
  const std::initializer_list<std::pair<Arg, const TensorView*>> others = {
      {XHAL_ADAMW_STEP_GRAD, &grad}, {XHAL_ADAMW_STEP_LR, lr}, {XHAL_ADAMW_STEP_GRAD_SCALE, grad_scale}};
  check.apart(XHAL_ADAMW_STEP_PARAM, param, others);
  check.apart(XHAL_ADAMW_STEP_EXP_AVG, exp_avg, others);
  check.apart(XHAL_ADAMW_STEP_EXP_AVG_SQ, exp_avg_sq, others);
  check.apart(XHAL_ADAMW_STEP_PARAM, param,
              {{XHAL_ADAMW_STEP_EXP_AVG, &exp_avg},
               {XHAL_ADAMW_STEP_EXP_AVG_SQ, &exp_avg_sq},
               {XHAL_ADAMW_STEP_MASTER, master}});
  check.apart(XHAL_ADAMW_STEP_EXP_AVG, exp_avg,
              {{XHAL_ADAMW_STEP_EXP_AVG_SQ, &exp_avg_sq}, {XHAL_ADAMW_STEP_MASTER, master}});
  check.apart(XHAL_ADAMW_STEP_EXP_AVG_SQ, exp_avg_sq, {{XHAL_ADAMW_STEP_MASTER, master}});
  if (master != nullptr) check.apart(XHAL_ADAMW_STEP_MASTER, *master, others);
  OpCall call(Op::adamw_step, param.dtype(), device, stream);
  const xhal_adamw_op_params op_params{sizeof op_params, params.lr,           params.beta1, params.beta2,
                                       params.eps,       params.weight_decay, params.step};
  call.set_params(op_params);
  call.set(XHAL_ADAMW_STEP_PARAM, param);
  call.set(XHAL_ADAMW_STEP_GRAD, grad);
  call.set(XHAL_ADAMW_STEP_EXP_AVG, exp_avg);
  call.set(XHAL_ADAMW_STEP_EXP_AVG_SQ, exp_avg_sq);
  call.set(XHAL_ADAMW_STEP_MASTER, master);
  call.set(XHAL_ADAMW_STEP_LR, lr);
  call.set(XHAL_ADAMW_STEP_GRAD_SCALE, grad_scale);
  call.run();
}

void global_grad_norm(const TensorView& grad, const TensorView& norm, const TensorView* clip_scale, float max_norm,
                      const Stream* stream) {
  const ArgChecks check(Op::global_grad_norm);
  check.tensor(XHAL_GLOBAL_GRAD_NORM_GRAD, grad, 1);
  check.float_dtype(XHAL_GLOBAL_GRAD_NORM_GRAD, grad);
  const Device device = grad.device();
  check_scalar(check, XHAL_GLOBAL_GRAD_NORM_NORM, norm, device, XHAL_GLOBAL_GRAD_NORM_GRAD);
  if (clip_scale != nullptr) {
    check_scalar(check, XHAL_GLOBAL_GRAD_NORM_CLIP_SCALE, *clip_scale, device, XHAL_GLOBAL_GRAD_NORM_GRAD);
    check.apart(XHAL_GLOBAL_GRAD_NORM_CLIP_SCALE, *clip_scale,
                {{XHAL_GLOBAL_GRAD_NORM_GRAD, &grad}, {XHAL_GLOBAL_GRAD_NORM_NORM, &norm}});
  }
  check.apart(XHAL_GLOBAL_GRAD_NORM_NORM, norm, {{XHAL_GLOBAL_GRAD_NORM_GRAD, &grad}});
  if (std::isnan(max_norm)) check.fail("max_norm", "a number (<= 0: no clipping)", "NaN");
  OpCall call(Op::global_grad_norm, grad.dtype(), device, stream);
  const xhal_grad_norm_op_params op_params{sizeof op_params, max_norm};
  call.set_params(op_params);
  call.set(XHAL_GLOBAL_GRAD_NORM_GRAD, grad);
  call.set(XHAL_GLOBAL_GRAD_NORM_NORM, norm);
  call.set(XHAL_GLOBAL_GRAD_NORM_CLIP_SCALE, clip_scale);
  call.run();
}

}  // namespace xhal::ops

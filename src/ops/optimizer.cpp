// Front ends of adamw_step and global_grad_norm: lists of rank-1 tensors (each parameter seen
// flat), or one flat buffer holding all parameters of one dtype (a list of one).
#include <cmath>

#include "core/text_format.hpp"
#include "ops/arg_checks.hpp"
#include "ops/op_call.hpp"
#include "xhal/ops.hpp"

namespace xhal::ops {
namespace {

// A one-element f32 tensor on `device` (a scalar that lives there).
void check_scalar(const ArgChecks& check, int slot, const TensorView& t, Device device, Arg device_arg) {
  check.tensor(slot, t, 1, false);
  check.dtype(slot, t, DType::f32, " (a device scalar)");
  check.dim(slot, t, 0, 1, "one element");
  check.same_device(slot, t, device, device_arg);
}

// At least one entry: a list op's call carries one.
void check_not_empty(const ArgChecks& check, const char* list, size_t entries) {
  if (entries == 0) check.fail(list, "a list of at least one tensor", "an empty list");
}

void check_hyperparameters(const ArgChecks& check, const AdamWParams& params, bool device_lr) {
  auto in_range = [&](const char* name, float v, float lo, float hi, const char* expected) {
    if (!(v >= lo && v <= hi) || !std::isfinite(v)) check.fail(name, expected, format_text("{}", v));
  };
  if (!device_lr) in_range("lr", params.lr, 0.0f, INFINITY, "a finite number >= 0");
  in_range("beta1", params.beta1, 0.0f, 0.999999f, "a number in [0, 1)");
  in_range("beta2", params.beta2, 0.0f, 0.999999f, "a number in [0, 1)");
  in_range("eps", params.eps, 0.0f, INFINITY, "a finite number >= 0");
  in_range("weight_decay", params.weight_decay, 0.0f, INFINITY, "a finite number >= 0");
  if (params.step < 1) check.fail("step", "the update's number, from 1", format_text("{}", params.step));
}

}  // namespace

void adamw_step(const std::vector<AdamWTensors>& tensors, const TensorView* lr, const TensorView* grad_scale,
                const AdamWParams& params, const Stream* stream) {
  const ArgChecks check(Op::adamw_step);
  check_not_empty(check, "tensors", tensors.size());
  const bool listed = tensors.size() > 1;  // entries are named param[i] in messages
  auto arg = [&](int slot, size_t i) { return listed ? Arg(slot, int64_t(i)) : Arg(slot); };
  const AdamWTensors& first = tensors.front();
  check.tensor(arg(XHAL_ADAMW_STEP_PARAM, 0), first.param, 1);
  check.float_dtype(arg(XHAL_ADAMW_STEP_PARAM, 0), first.param);
  const DType dtype = first.param.dtype();
  const Device device = first.param.device();
  const Arg device_arg = arg(XHAL_ADAMW_STEP_PARAM, 0);
  std::vector<ArgChecks::Extent> extents;
  extents.reserve(5 * tensors.size() + 2);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const AdamWTensors& e = tensors[i];
    const Arg param = arg(XHAL_ADAMW_STEP_PARAM, i);
    check.tensor(param, e.param, 1);
    check.dtype(param, e.param, dtype, listed ? " (one dtype for the list, as param[0])" : "");
    check.same_device(param, e.param, device, device_arg);
    const Arg grad = arg(XHAL_ADAMW_STEP_GRAD, i);
    check.tensor(grad, e.grad, 1);
    check.dtype(grad, e.grad, dtype, " (same as param)");
    check.same_shape(grad, e.grad, e.param, param);
    check.same_device(grad, e.grad, device, device_arg);
    if ((e.master != nullptr) != (first.master != nullptr)) {
      check.fail(arg(XHAL_ADAMW_STEP_MASTER, i), "master weights for every entry or for none",
                 first.master != nullptr ? "none, while param[0] has them" : "master weights, while param[0] has none");
    }
    for (const auto& [slot, t] : {std::pair{XHAL_ADAMW_STEP_EXP_AVG, &e.exp_avg},
                                  {XHAL_ADAMW_STEP_EXP_AVG_SQ, &e.exp_avg_sq},
                                  {XHAL_ADAMW_STEP_MASTER, e.master}}) {
      if (t == nullptr) continue;
      check.tensor(arg(slot, i), *t, 1);
      check.dtype(arg(slot, i), *t, DType::f32, " (optimizer state is f32)");
      check.same_shape(arg(slot, i), *t, e.param, param);
      check.same_device(arg(slot, i), *t, device, device_arg);
      extents.push_back({arg(slot, i), t, true});
    }
    extents.push_back({param, &e.param, true});
    extents.push_back({grad, &e.grad, false});
  }
  if (lr != nullptr) check_scalar(check, XHAL_ADAMW_STEP_LR, *lr, device, device_arg);
  if (grad_scale != nullptr) check_scalar(check, XHAL_ADAMW_STEP_GRAD_SCALE, *grad_scale, device, device_arg);
  check_hyperparameters(check, params, lr != nullptr);
  // Every buffer is updated in place while the others are read.
  extents.push_back({XHAL_ADAMW_STEP_LR, lr, false});
  extents.push_back({XHAL_ADAMW_STEP_GRAD_SCALE, grad_scale, false});
  check.disjoint(std::move(extents));

  OpCall call(Op::adamw_step, dtype, device, stream, int64_t(tensors.size()));
  const xhal_adamw_op_params op_params{sizeof op_params, params.lr,           params.beta1, params.beta2,
                                       params.eps,       params.weight_decay, params.step};
  call.set_params(op_params);
  call.set(XHAL_ADAMW_STEP_LR, lr);
  call.set(XHAL_ADAMW_STEP_GRAD_SCALE, grad_scale);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const AdamWTensors& e = tensors[i];
    call.set(XHAL_ADAMW_STEP_PARAM, int64_t(i), e.param);
    call.set(XHAL_ADAMW_STEP_GRAD, int64_t(i), e.grad);
    call.set(XHAL_ADAMW_STEP_EXP_AVG, int64_t(i), e.exp_avg);
    call.set(XHAL_ADAMW_STEP_EXP_AVG_SQ, int64_t(i), e.exp_avg_sq);
    call.set(XHAL_ADAMW_STEP_MASTER, int64_t(i), e.master);
  }
  call.run();
}

void adamw_step(const TensorView& param, const TensorView& grad, const TensorView& exp_avg,
                const TensorView& exp_avg_sq, const TensorView* master, const TensorView* lr,
                const TensorView* grad_scale, const AdamWParams& params, const Stream* stream) {
  adamw_step({AdamWTensors{param, grad, exp_avg, exp_avg_sq, master}}, lr, grad_scale, params, stream);
}

void global_grad_norm(const std::vector<TensorView>& grads, const TensorView& norm, const TensorView* clip_scale,
                      float max_norm, const Stream* stream) {
  const ArgChecks check(Op::global_grad_norm);
  check_not_empty(check, "grads", grads.size());
  const bool listed = grads.size() > 1;
  auto arg = [&](size_t i) {
    return listed ? Arg(XHAL_GLOBAL_GRAD_NORM_GRAD, int64_t(i)) : Arg(XHAL_GLOBAL_GRAD_NORM_GRAD);
  };
  check.tensor(arg(0), grads.front(), 1);
  check.float_dtype(arg(0), grads.front());
  const DType dtype = grads.front().dtype();
  const Device device = grads.front().device();
  std::vector<ArgChecks::Extent> extents;
  extents.reserve(grads.size() + 2);
  for (size_t i = 0; i < grads.size(); ++i) {
    check.tensor(arg(i), grads[i], 1);
    check.dtype(arg(i), grads[i], dtype, listed ? " (one dtype for the list, as grad[0])" : "");
    check.same_device(arg(i), grads[i], device, arg(0));
    extents.push_back({arg(i), &grads[i], false});
  }
  check_scalar(check, XHAL_GLOBAL_GRAD_NORM_NORM, norm, device, arg(0));
  if (clip_scale != nullptr) check_scalar(check, XHAL_GLOBAL_GRAD_NORM_CLIP_SCALE, *clip_scale, device, arg(0));
  extents.push_back({XHAL_GLOBAL_GRAD_NORM_NORM, &norm, true});
  extents.push_back({XHAL_GLOBAL_GRAD_NORM_CLIP_SCALE, clip_scale, true});
  check.disjoint(std::move(extents));
  if (std::isnan(max_norm)) check.fail("max_norm", "a number (<= 0: no clipping)", "NaN");

  OpCall call(Op::global_grad_norm, dtype, device, stream, int64_t(grads.size()));
  const xhal_grad_norm_op_params op_params{sizeof op_params, max_norm};
  call.set_params(op_params);
  call.set(XHAL_GLOBAL_GRAD_NORM_NORM, norm);
  call.set(XHAL_GLOBAL_GRAD_NORM_CLIP_SCALE, clip_scale);
  for (size_t i = 0; i < grads.size(); ++i) call.set(XHAL_GLOBAL_GRAD_NORM_GRAD, int64_t(i), grads[i]);
  call.run();
}

void global_grad_norm(const TensorView& grad, const TensorView& norm, const TensorView* clip_scale, float max_norm,
                      const Stream* stream) {
  global_grad_norm(std::vector<TensorView>{grad}, norm, clip_scale, max_norm, stream);
}

}  // namespace xhal::ops

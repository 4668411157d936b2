// Front ends of cross_entropy and cross_entropy_backward.
#include <cmath>

#include "core/text_format.hpp"
#include "ops/arg_checks.hpp"
#include "ops/op_call.hpp"
#include "xhal/ops.hpp"

namespace xhal::ops {
namespace {

// Both ops share the slots of logits, labels and lse; `per_token` is the forward's loss or the
// backward's dloss (slot 2).
void check_cross_entropy_args(const ArgChecks& check, const TensorView& logits, const TensorView& labels,
                              const TensorView& lse, const TensorView& per_token, const CrossEntropyParams& params,
                              Device device) {
  check.tensor(XHAL_CROSS_ENTROPY_LOGITS, logits, 2);
  check.float_dtype(XHAL_CROSS_ENTROPY_LOGITS, logits);
  const int64_t T = logits.size(0);
  if (logits.size(1) < 1 && T > 0) {
    check.fail(XHAL_CROSS_ENTROPY_LOGITS, "at least one class (dim 1)", format_text("{}", logits.size(1)));
  }
  check.tensor(XHAL_CROSS_ENTROPY_LABELS, labels, 1, false);
  check.dtype_in(XHAL_CROSS_ENTROPY_LABELS, labels, {DType::i32, DType::i64});
  check.dim(XHAL_CROSS_ENTROPY_LABELS, labels, 0, T, "tokens of logits");
  for (const auto& [slot, t] : {std::pair{XHAL_CROSS_ENTROPY_LSE, &lse}, {XHAL_CROSS_ENTROPY_LOSS, &per_token}}) {
    check.tensor(slot, *t, 1, false);
    check.dtype(slot, *t, DType::f32, " (per-token values are f32)");
    check.dim(slot, *t, 0, T, "tokens of logits");
  }
  if (!(params.label_smoothing >= 0 && params.label_smoothing <= 1)) {
    check.fail("label_smoothing", "a number in [0, 1]", format_text("{}", params.label_smoothing));
  }
  if (!(params.z_loss >= 0) || !std::isfinite(params.z_loss)) {
    check.fail("z_loss", "a finite number >= 0", format_text("{}", params.z_loss));
  }
  for (const auto& [slot, t] : {std::pair{XHAL_CROSS_ENTROPY_LOGITS, &logits},
                                {XHAL_CROSS_ENTROPY_LABELS, &labels},
                                {XHAL_CROSS_ENTROPY_LSE, &lse},
                                {XHAL_CROSS_ENTROPY_LOSS, &per_token}}) {
    check.same_device(slot, *t, device, XHAL_CROSS_ENTROPY_LOGITS);
  }
}

xhal_cross_entropy_op_params op_params_of(const CrossEntropyParams& p) {
  return {sizeof(xhal_cross_entropy_op_params), p.ignore_index, p.label_smoothing, p.z_loss};
}

}  // namespace

void cross_entropy(const TensorView& logits, const TensorView& labels, const TensorView& loss, const TensorView& lse,
                   const CrossEntropyParams& params, const Stream* stream) {
  const ArgChecks check(Op::cross_entropy);
  const Device device = logits.device();
  check_cross_entropy_args(check, logits, labels, lse, loss, params, device);
  check.apart(
      XHAL_CROSS_ENTROPY_LOSS, loss,
      {{XHAL_CROSS_ENTROPY_LOGITS, &logits}, {XHAL_CROSS_ENTROPY_LABELS, &labels}, {XHAL_CROSS_ENTROPY_LSE, &lse}});
  check.apart(XHAL_CROSS_ENTROPY_LSE, lse,
              {{XHAL_CROSS_ENTROPY_LOGITS, &logits}, {XHAL_CROSS_ENTROPY_LABELS, &labels}});
  OpCall call(Op::cross_entropy, logits.dtype(), device, stream);
  const xhal_cross_entropy_op_params op_params = op_params_of(params);
  call.set_params(op_params);
  call.set(XHAL_CROSS_ENTROPY_LOGITS, logits);
  call.set(XHAL_CROSS_ENTROPY_LABELS, labels);
  call.set(XHAL_CROSS_ENTROPY_LOSS, loss);
  call.set(XHAL_CROSS_ENTROPY_LSE, lse);
  call.run();
}

void cross_entropy_backward(const TensorView& logits, const TensorView& labels, const TensorView& lse,
                            const TensorView& dloss, const TensorView& dlogits, const CrossEntropyParams& params,
                            const Stream* stream) {
  static_assert(XHAL_CROSS_ENTROPY_BACKWARD_LOGITS == XHAL_CROSS_ENTROPY_LOGITS &&
                XHAL_CROSS_ENTROPY_BACKWARD_LABELS == XHAL_CROSS_ENTROPY_LABELS &&
                XHAL_CROSS_ENTROPY_BACKWARD_LSE == XHAL_CROSS_ENTROPY_LSE &&
                XHAL_CROSS_ENTROPY_BACKWARD_DLOSS == XHAL_CROSS_ENTROPY_LOSS);
  const ArgChecks check(Op::cross_entropy_backward);
  const Device device = logits.device();
  check_cross_entropy_args(check, logits, labels, lse, dloss, params, device);
  constexpr int kDlogits = XHAL_CROSS_ENTROPY_BACKWARD_DLOGITS;
  check.tensor(kDlogits, dlogits, 2);
  check.dtype(kDlogits, dlogits, logits.dtype(), " (same as logits)");
  check.same_shape(kDlogits, dlogits, logits, XHAL_CROSS_ENTROPY_BACKWARD_LOGITS);
  check.same_device(kDlogits, dlogits, device, XHAL_CROSS_ENTROPY_BACKWARD_LOGITS);
  check.apart_or_in_place(kDlogits, dlogits, XHAL_CROSS_ENTROPY_BACKWARD_LOGITS, logits);
  check.apart(kDlogits, dlogits,
              {{XHAL_CROSS_ENTROPY_BACKWARD_LABELS, &labels},
               {XHAL_CROSS_ENTROPY_BACKWARD_LSE, &lse},
               {XHAL_CROSS_ENTROPY_BACKWARD_DLOSS, &dloss}});
  OpCall call(Op::cross_entropy_backward, logits.dtype(), device, stream);
  const xhal_cross_entropy_op_params op_params = op_params_of(params);
  call.set_params(op_params);
  call.set(XHAL_CROSS_ENTROPY_BACKWARD_LOGITS, logits);
  call.set(XHAL_CROSS_ENTROPY_BACKWARD_LABELS, labels);
  call.set(XHAL_CROSS_ENTROPY_BACKWARD_LSE, lse);
  call.set(XHAL_CROSS_ENTROPY_BACKWARD_DLOSS, dloss);
  call.set(kDlogits, dlogits);
  call.run();
}

}  // namespace xhal::ops

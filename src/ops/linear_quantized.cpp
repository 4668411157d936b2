// Front ends of linear_fp8 and linear_int8: codes of x and w (fp8, or int8), their f32 scales per
// tensor or per row, and an output (with the bias) in a float dtype, which keys the kernel.
#include "core/text_format.hpp"

#include "ops/arg_checks.hpp"
#include "ops/op_call.hpp"
#include "xhal/ops.hpp"

namespace xhal::ops {
namespace {

// A scale of `t`'s rows: [1] for the whole tensor or [rows, 1], f32 and contiguous.
void check_scale(const ArgChecks& check, int slot, const TensorView& scale, int64_t rows, std::string_view of_what) {
  check.dtype(slot, scale, DType::f32, " (scales are f32)");
  if (scale.ndim() == 2) {
    check.tensor(slot, scale, 2);
    check.dim(slot, scale, 0, rows, of_what);
    check.dim(slot, scale, 1, 1, "1 (one scale a row)");
  } else {
    check.tensor(slot, scale, 1);
    check.dim(slot, scale, 0, 1, "one scale for the tensor (or [rows, 1])");
  }
  if (!scale.is_contiguous()) check.fail(slot, "a contiguous tensor", "strided");
}

// linear_fp8's and linear_int8's checks and call (their slots are the same): codes of `formats`.
void linear_quantized(Op op, std::initializer_list<DType> formats, const TensorView& x, const TensorView& x_scale,
                      const TensorView& w, const TensorView& w_scale, const TensorView* bias, const TensorView& out,
                      const Stream* stream) {
  const ArgChecks check(op);
  check.tensor(XHAL_LINEAR_FP8_X, x, 2);
  check.dtype_in(XHAL_LINEAR_FP8_X, x, formats);
  const int64_t M = x.size(0), K = x.size(1);
  check.tensor(XHAL_LINEAR_FP8_W, w, 2);
  check.dtype_in(XHAL_LINEAR_FP8_W, w, formats);
  check.dim(XHAL_LINEAR_FP8_W, w, 1, K, "in features of x");
  if (op == Op::linear_int8 && K > XHAL_LINEAR_INT8_MAX_K) {
    check.fail(XHAL_LINEAR_FP8_X,
               format_text("at most {} columns (int32 sums cannot overflow)", XHAL_LINEAR_INT8_MAX_K),
               format_text("{}", K));
  }
  const int64_t N = w.size(0);
  check_scale(check, XHAL_LINEAR_FP8_X_SCALE, x_scale, M, "rows of x");
  check_scale(check, XHAL_LINEAR_FP8_W_SCALE, w_scale, N, "rows of w (out features)");
  check.tensor(XHAL_LINEAR_FP8_OUT, out, 2);
  check.float_dtype(XHAL_LINEAR_FP8_OUT, out);
  check.dim(XHAL_LINEAR_FP8_OUT, out, 0, M, "rows of x");
  check.dim(XHAL_LINEAR_FP8_OUT, out, 1, N, "out features of w");
  for (const auto& [slot, t] : {std::pair{XHAL_LINEAR_FP8_X, &x},
                                {XHAL_LINEAR_FP8_X_SCALE, &x_scale},
                                {XHAL_LINEAR_FP8_W, &w},
                                {XHAL_LINEAR_FP8_W_SCALE, &w_scale}}) {
    check.same_device(slot, *t, out.device(), XHAL_LINEAR_FP8_OUT);
  }
  if (bias != nullptr) {
    check.tensor(XHAL_LINEAR_FP8_BIAS, *bias, 1);
    check.dtype(XHAL_LINEAR_FP8_BIAS, *bias, out.dtype(), " (same as out)");
    check.dim(XHAL_LINEAR_FP8_BIAS, *bias, 0, N, "out features of w");
    check.same_device(XHAL_LINEAR_FP8_BIAS, *bias, out.device(), XHAL_LINEAR_FP8_OUT);
  }
  check.apart(XHAL_LINEAR_FP8_OUT, out,
              {{XHAL_LINEAR_FP8_X, &x},
               {XHAL_LINEAR_FP8_X_SCALE, &x_scale},
               {XHAL_LINEAR_FP8_W, &w},
               {XHAL_LINEAR_FP8_W_SCALE, &w_scale},
               {XHAL_LINEAR_FP8_BIAS, bias}});
  OpCall call(op, out.dtype(), out.device(), stream);
  call.set(XHAL_LINEAR_FP8_X, x);
  call.set(XHAL_LINEAR_FP8_X_SCALE, x_scale);
  call.set(XHAL_LINEAR_FP8_W, w);
  call.set(XHAL_LINEAR_FP8_W_SCALE, w_scale);
  call.set(XHAL_LINEAR_FP8_BIAS, bias);
  call.set(XHAL_LINEAR_FP8_OUT, out);
  call.run();
}

static_assert(XHAL_LINEAR_INT8_X == XHAL_LINEAR_FP8_X && XHAL_LINEAR_INT8_X_SCALE == XHAL_LINEAR_FP8_X_SCALE &&
                  XHAL_LINEAR_INT8_W == XHAL_LINEAR_FP8_W && XHAL_LINEAR_INT8_W_SCALE == XHAL_LINEAR_FP8_W_SCALE &&
                  XHAL_LINEAR_INT8_BIAS == XHAL_LINEAR_FP8_BIAS && XHAL_LINEAR_INT8_OUT == XHAL_LINEAR_FP8_OUT,
              "linear_int8 has linear_fp8's slots");

}  // namespace

void linear_fp8(const TensorView& x, const TensorView& x_scale, const TensorView& w, const TensorView& w_scale,
                const TensorView* bias, const TensorView& out, const Stream* stream) {
  linear_quantized(Op::linear_fp8, {DType::f8_e4m3, DType::f8_e5m2}, x, x_scale, w, w_scale, bias, out, stream);
}

void linear_int8(const TensorView& x, const TensorView& x_scale, const TensorView& w, const TensorView& w_scale,
                 const TensorView* bias, const TensorView& out, const Stream* stream) {
  linear_quantized(Op::linear_int8, {DType::i8}, x, x_scale, w, w_scale, bias, out, stream);
}

}  // namespace xhal::ops

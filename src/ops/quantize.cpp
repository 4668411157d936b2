// Front ends of quantize and dequantize: the float tensor and the code tensor (fp8 or int8) of one
// shape (rows may be strided, inner dims contiguous), and the scales in the layout the granularity
// names.
#include "core/text_format.hpp"

#include "ops/arg_checks.hpp"
#include "ops/op_call.hpp"
#include "xhal/ops.hpp"

namespace xhal::ops {
namespace {

using Granularity = QuantizeParams::Granularity;

// The checked call parameters; `fp8` is the code tensor (fp8 or int8), `wide` the float one.
xhal_quantize_op_params checked_params(const ArgChecks& check, int wide_slot, const TensorView& wide, int fp8_slot,
                                       const TensorView& fp8, int scale_slot, const TensorView& scale,
                                       const QuantizeParams& p) {
  check.min_rank(wide_slot, wide, 1);
  check.tensor(wide_slot, wide, wide.ndim());
  check.float_dtype(wide_slot, wide);
  check.tensor(fp8_slot, fp8, wide.ndim());
  check.same_shape(fp8_slot, fp8, wide, wide_slot);
  check.dtype_in(fp8_slot, fp8, {DType::f8_e4m3, DType::f8_e5m2, DType::i8});
  const int rank = wide.ndim();
  const int64_t N = wide.size(-1);
  if (p.granularity != Granularity::per_tensor && p.granularity != Granularity::per_row &&
      p.granularity != Granularity::per_block) {
    check.fail("granularity", "per_tensor (0), per_row (1) or per_block (2)",
               format_text("{}", static_cast<int>(p.granularity)));
  }
  if (p.granularity == Granularity::per_block && p.block < 1) {
    check.fail("block", ">= 1", format_text("{}", p.block));
  }
  check.dtype(scale_slot, scale, DType::f32, " (scales are f32)");
  if (!scale.is_contiguous()) check.fail(scale_slot, "a contiguous tensor", "strided");
  if (p.granularity == Granularity::per_tensor) {
    check.tensor(scale_slot, scale, 1);
    check.dim(scale_slot, scale, 0, 1, "one scale for the tensor");
  } else {
    check.tensor(scale_slot, scale, rank);
    for (int d = 0; d + 1 < rank; ++d) check.dim(scale_slot, scale, d, wide.size(d), "as the rows of the tensor");
    const int64_t groups = p.granularity == Granularity::per_row ? 1 : (N + p.block - 1) / p.block;
    check.dim(scale_slot, scale, rank - 1, groups,
              p.granularity == Granularity::per_row ? "1 (one scale a row)" : "ceil(N / block) (one scale a block)");
  }
  check.same_device(fp8_slot, fp8, wide.device(), wide_slot);
  check.same_device(scale_slot, scale, wide.device(), wide_slot);
  return {sizeof(xhal_quantize_op_params), static_cast<int32_t>(p.granularity), p.dynamic ? 1 : 0,
          p.granularity == Granularity::per_block ? p.block : 0};
}

}  // namespace

void quantize(const TensorView& x, const TensorView& q, const TensorView& scale, const QuantizeParams& params,
              const Stream* stream) {
  const ArgChecks check(Op::quantize);
  const xhal_quantize_op_params p =
      checked_params(check, XHAL_QUANTIZE_X, x, XHAL_QUANTIZE_Q, q, XHAL_QUANTIZE_SCALE, scale, params);
  check.apart(XHAL_QUANTIZE_Q, q, {{XHAL_QUANTIZE_X, &x}, {XHAL_QUANTIZE_SCALE, &scale}});
  check.apart(XHAL_QUANTIZE_SCALE, scale, {{XHAL_QUANTIZE_X, &x}});
  OpCall call(Op::quantize, x.dtype(), x.device(), stream);
  call.set_params(p);
  call.set(XHAL_QUANTIZE_X, x);
  call.set(XHAL_QUANTIZE_Q, q);
  call.set(XHAL_QUANTIZE_SCALE, scale);
  call.run();
}

void dequantize(const TensorView& q, const TensorView& scale, const TensorView& out, const QuantizeParams& params,
                const Stream* stream) {
  const ArgChecks check(Op::dequantize);
  const xhal_quantize_op_params p =
      checked_params(check, XHAL_DEQUANTIZE_OUT, out, XHAL_DEQUANTIZE_Q, q, XHAL_DEQUANTIZE_SCALE, scale, params);
  check.apart(XHAL_DEQUANTIZE_OUT, out, {{XHAL_DEQUANTIZE_Q, &q}, {XHAL_DEQUANTIZE_SCALE, &scale}});
  OpCall call(Op::dequantize, out.dtype(), out.device(), stream);
  call.set_params(p);
  call.set(XHAL_DEQUANTIZE_Q, q);
  call.set(XHAL_DEQUANTIZE_SCALE, scale);
  call.set(XHAL_DEQUANTIZE_OUT, out);
  call.run();
}

}  // namespace xhal::ops

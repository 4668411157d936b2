// Front end of argmax: logits[..., V] rows (any strides), indices and values of the leading shape
// (contiguous).
#include "core/text_format.hpp"

#include "ops/arg_checks.hpp"
#include "ops/op_call.hpp"
#include "xhal/ops.hpp"

namespace xhal::ops {

void argmax(const TensorView& logits, const TensorView& indices, const TensorView* values, const Stream* stream) {
  const ArgChecks check(Op::argmax);
  check.min_rank(XHAL_ARGMAX_LOGITS, logits, 1);
  check.float_dtype(XHAL_ARGMAX_LOGITS, logits);
  if (logits.size(-1) < 1) {
    check.fail(XHAL_ARGMAX_LOGITS, "a last dim of at least 1 (a row to pick from)", format_text("{}", logits.size(-1)));
  }
  const int rank = logits.ndim() - 1;
  // One element per row of logits, contiguous (kernels write row r's at offset r).
  auto check_row_shaped = [&](int slot, const TensorView& t) {
    check.tensor(slot, t, rank);
    for (int d = 0; d < rank; ++d) check.dim(slot, t, d, logits.size(d), "same as logits");
    if (!t.is_contiguous()) check.fail(slot, "a contiguous tensor", "strided");
    check.same_device(slot, t, logits.device(), XHAL_ARGMAX_LOGITS);
  };
  check_row_shaped(XHAL_ARGMAX_INDICES, indices);
  check.dtype_in(XHAL_ARGMAX_INDICES, indices, {DType::i32, DType::i64});
  if (logits.size(-1) > INT32_MAX && indices.dtype() == DType::i32) {
    check.fail(XHAL_ARGMAX_INDICES, "i64 for rows longer than 2^31 - 1", "i32");
  }
  check.apart(XHAL_ARGMAX_INDICES, indices, {{XHAL_ARGMAX_LOGITS, &logits}});
  if (values != nullptr) {
    check_row_shaped(XHAL_ARGMAX_VALUES, *values);
    check.dtype(XHAL_ARGMAX_VALUES, *values, logits.dtype(), " (same as logits)");
    check.apart(XHAL_ARGMAX_VALUES, *values, {{XHAL_ARGMAX_LOGITS, &logits}, {XHAL_ARGMAX_INDICES, &indices}});
  }
  OpCall call(Op::argmax, logits.dtype(), logits.device(), stream);
  call.set(XHAL_ARGMAX_LOGITS, logits);
  call.set(XHAL_ARGMAX_INDICES, indices);
  if (values != nullptr) call.set(XHAL_ARGMAX_VALUES, *values);
  call.run();
}

}  // namespace xhal::ops

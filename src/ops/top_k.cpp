// Front end of top_k: x[..., V] rows (any strides), values and indices [..., k] (contiguous).
#include "core/text_format.hpp"

#include "ops/arg_checks.hpp"
#include "ops/op_call.hpp"
#include "xhal/ops.hpp"

namespace xhal::ops {

void top_k(const TensorView& x, const TensorView& values, const TensorView& indices, const Stream* stream) {
  const ArgChecks check(Op::top_k);
  check.min_rank(XHAL_TOP_K_X, x, 1);
  check.float_dtype(XHAL_TOP_K_X, x);
  const int rank = x.ndim();
  const int64_t V = x.size(-1);
  if (V < 1 || V > INT32_MAX) {
    check.fail(XHAL_TOP_K_X, "a last dim of 1 to 2^31 - 1", format_text("{}", V));
  }
  // [..., k] with x's leading dims, contiguous (kernels write row r's k at offset r * k).
  auto check_top_k_shaped = [&](int slot, const TensorView& t) {
    check.tensor(slot, t, rank);
    for (int d = 0; d + 1 < rank; ++d) check.dim(slot, t, d, x.size(d), "same as x");
    if (!t.is_contiguous()) check.fail(slot, "a contiguous tensor", "strided");
    check.same_device(slot, t, x.device(), XHAL_TOP_K_X);
  };
  check_top_k_shaped(XHAL_TOP_K_VALUES, values);
  const int64_t k = values.size(-1);
  if (k < 1 || k > V || k > XHAL_TOP_K_MAX_K) {
    check.fail(XHAL_TOP_K_VALUES,
               format_text("a last dim k of 1 to min(V = {}, XHAL_TOP_K_MAX_K = {})", V, XHAL_TOP_K_MAX_K),
               format_text("{}", k));
  }
  check.dtype(XHAL_TOP_K_VALUES, values, x.dtype(), " (same as x)");
  check_top_k_shaped(XHAL_TOP_K_INDICES, indices);
  check.dim(XHAL_TOP_K_INDICES, indices, rank - 1, k, "k, as values");
  check.dtype_in(XHAL_TOP_K_INDICES, indices, {DType::i32, DType::i64});
  check.apart(XHAL_TOP_K_VALUES, values, {{XHAL_TOP_K_X, &x}});
  check.apart(XHAL_TOP_K_INDICES, indices, {{XHAL_TOP_K_X, &x}, {XHAL_TOP_K_VALUES, &values}});
  OpCall call(Op::top_k, x.dtype(), x.device(), stream);
  call.set(XHAL_TOP_K_X, x);
  call.set(XHAL_TOP_K_VALUES, values);
  call.set(XHAL_TOP_K_INDICES, indices);
  call.run();
}

}  // namespace xhal::ops

// Front end of merge_attention_states.
#include "ops/arg_checks.hpp"
#include "ops/op_call.hpp"
#include "xhal/ops.hpp"

namespace xhal::ops {

void merge_attention_states(const TensorView& out_a, const TensorView& lse_a, const TensorView& out_b,
                            const TensorView& lse_b, const TensorView& out, const TensorView* lse,
                            const Stream* stream) {
  const ArgChecks check(Op::merge_attention_states);
  check.tensor(XHAL_MERGE_ATTENTION_STATES_OUT_A, out_a, 3);
  check.float_dtype(XHAL_MERGE_ATTENTION_STATES_OUT_A, out_a);
  const int64_t T = out_a.size(0), H = out_a.size(1);
  for (const auto& [slot, view] :
       {std::pair{XHAL_MERGE_ATTENTION_STATES_OUT_B, &out_b}, std::pair{XHAL_MERGE_ATTENTION_STATES_OUT, &out}}) {
    check.tensor(slot, *view, 3);
    check.dtype(slot, *view, out_a.dtype(), " (same as out_a)");
    check.same_shape(slot, *view, out_a, XHAL_MERGE_ATTENTION_STATES_OUT_A);
    check.same_device(slot, *view, out.device(), XHAL_MERGE_ATTENTION_STATES_OUT);
  }
  check.same_device(XHAL_MERGE_ATTENTION_STATES_OUT_A, out_a, out.device(), XHAL_MERGE_ATTENTION_STATES_OUT);
  for (const auto& [slot, view] :
       {std::pair{XHAL_MERGE_ATTENTION_STATES_LSE_A, &lse_a}, std::pair{XHAL_MERGE_ATTENTION_STATES_LSE_B, &lse_b},
        std::pair{XHAL_MERGE_ATTENTION_STATES_LSE, lse}}) {
    if (view == nullptr) continue;
    check.tensor(slot, *view, 2, false);
    check.dtype(slot, *view, DType::f32, " (lse is always f32)");
    check.dim(slot, *view, 0, H, "heads of out_a");
    check.dim(slot, *view, 1, T, "tokens of out_a");
    check.same_device(slot, *view, out.device(), XHAL_MERGE_ATTENTION_STATES_OUT);
  }
  // Each (token, head) row is read whole before its output is written: out may be out_a or out_b,
  // lse may be lse_a or lse_b, nothing may overlap partly.
  check.apart_or_in_place(XHAL_MERGE_ATTENTION_STATES_OUT, out, XHAL_MERGE_ATTENTION_STATES_OUT_A, out_a);
  check.apart_or_in_place(XHAL_MERGE_ATTENTION_STATES_OUT, out, XHAL_MERGE_ATTENTION_STATES_OUT_B, out_b);
  check.apart(XHAL_MERGE_ATTENTION_STATES_OUT, out,
              {{XHAL_MERGE_ATTENTION_STATES_LSE_A, &lse_a}, {XHAL_MERGE_ATTENTION_STATES_LSE_B, &lse_b}});
  if (lse != nullptr) {
    check.apart_or_in_place(XHAL_MERGE_ATTENTION_STATES_LSE, *lse, XHAL_MERGE_ATTENTION_STATES_LSE_A, lse_a);
    check.apart_or_in_place(XHAL_MERGE_ATTENTION_STATES_LSE, *lse, XHAL_MERGE_ATTENTION_STATES_LSE_B, lse_b);
    check.apart(XHAL_MERGE_ATTENTION_STATES_LSE, *lse,
                {{XHAL_MERGE_ATTENTION_STATES_OUT_A, &out_a},
                 {XHAL_MERGE_ATTENTION_STATES_OUT_B, &out_b},
                 {XHAL_MERGE_ATTENTION_STATES_OUT, &out}});
  }
  OpCall call(Op::merge_attention_states, out_a.dtype(), out.device(), stream);
  call.set(XHAL_MERGE_ATTENTION_STATES_OUT_A, out_a);
  call.set(XHAL_MERGE_ATTENTION_STATES_LSE_A, lse_a);
  call.set(XHAL_MERGE_ATTENTION_STATES_OUT_B, out_b);
  call.set(XHAL_MERGE_ATTENTION_STATES_LSE_B, lse_b);
  call.set(XHAL_MERGE_ATTENTION_STATES_OUT, out);
  call.set(XHAL_MERGE_ATTENTION_STATES_LSE, lse);
  call.run();
}

}  // namespace xhal::ops

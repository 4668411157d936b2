// Front end of sample: logits[B, V] (rows may be strided), tokens[B] and the optional per-row
// settings (contiguous [B]). The scalar settings are checked here; the per-row tensors' values
// live on the device and every value has a meaning (docs/ops.md, sample), so they are not.
#include <cmath>

#include "core/text_format.hpp"
#include "ops/arg_checks.hpp"
#include "ops/op_call.hpp"
#include "xhal/ops.hpp"

namespace xhal::ops {

void sample(const TensorView& logits, const TensorView& tokens, const SampleParams& params, const SampleRowParams& rows,
            const Stream* stream) {
  const ArgChecks check(Op::sample);
  check.tensor(XHAL_SAMPLE_LOGITS, logits, 2);
  check.float_dtype(XHAL_SAMPLE_LOGITS, logits);
  const int64_t B = logits.size(0), V = logits.size(1);
  if (V < 1 || V > XHAL_SAMPLE_MAX_VOCABULARY) {
    check.fail(XHAL_SAMPLE_LOGITS, format_text("a vocabulary (dim 1) of 1 to {}", XHAL_SAMPLE_MAX_VOCABULARY),
               format_text("{}", V));
  }
  auto check_per_row = [&](int slot, const TensorView& t, std::initializer_list<DType> dtypes) {
    check.tensor(slot, t, 1);
    check.dim(slot, t, 0, B, "rows of logits");
    if (!t.is_contiguous()) check.fail(slot, "a contiguous tensor", "strided");
    check.dtype_in(slot, t, dtypes);
    check.same_device(slot, t, logits.device(), XHAL_SAMPLE_LOGITS);
  };
  check_per_row(XHAL_SAMPLE_TOKENS, tokens, {DType::i32, DType::i64});
  const std::pair<int, const TensorView*> settings[] = {{XHAL_SAMPLE_TEMPERATURE, rows.temperature},
                                                        {XHAL_SAMPLE_TOP_K, rows.top_k},
                                                        {XHAL_SAMPLE_TOP_P, rows.top_p},
                                                        {XHAL_SAMPLE_MIN_P, rows.min_p},
                                                        {XHAL_SAMPLE_SEEDS, rows.seeds},
                                                        {XHAL_SAMPLE_STEPS, rows.steps}};
  for (const auto& [slot, t] : settings) {
    if (t == nullptr) continue;
    const bool is_float = slot == XHAL_SAMPLE_TEMPERATURE || slot == XHAL_SAMPLE_TOP_P || slot == XHAL_SAMPLE_MIN_P;
    check_per_row(slot, *t, {is_float ? DType::f32 : slot == XHAL_SAMPLE_TOP_K ? DType::i32 : DType::i64});
  }
  if (!(params.temperature >= 0) || !std::isfinite(params.temperature)) {
    check.fail("temperature", "a finite number >= 0 (0: greedy)", format_text("{}", params.temperature));
  }
  if (params.top_k < 0) check.fail("top_k", "a count >= 0 (0: off)", format_text("{}", params.top_k));
  if (!(params.top_p > 0 && params.top_p <= 1)) {
    check.fail("top_p", "a number in (0, 1] (1: off)", format_text("{}", params.top_p));
  }
  if (!(params.min_p >= 0 && params.min_p <= 1)) {
    check.fail("min_p", "a number in [0, 1] (0: off)", format_text("{}", params.min_p));
  }
  check.apart(XHAL_SAMPLE_TOKENS, tokens,
              {{XHAL_SAMPLE_LOGITS, &logits},
               {XHAL_SAMPLE_TEMPERATURE, rows.temperature},
               {XHAL_SAMPLE_TOP_K, rows.top_k},
               {XHAL_SAMPLE_TOP_P, rows.top_p},
               {XHAL_SAMPLE_MIN_P, rows.min_p},
               {XHAL_SAMPLE_SEEDS, rows.seeds},
               {XHAL_SAMPLE_STEPS, rows.steps}});
  OpCall call(Op::sample, logits.dtype(), logits.device(), stream);
  const xhal_sample_op_params op_params{sizeof(xhal_sample_op_params),
                                        params.temperature,
                                        params.top_k,
                                        params.top_p,
                                        params.min_p,
                                        params.seed,
                                        params.step};
  call.set_params(op_params);
  call.set(XHAL_SAMPLE_LOGITS, logits);
  call.set(XHAL_SAMPLE_TOKENS, tokens);
  for (const auto& [slot, t] : settings) {
    if (t != nullptr) call.set(slot, *t);
  }
  call.run();
}

}  // namespace xhal::ops

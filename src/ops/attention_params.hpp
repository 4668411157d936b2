// Checks shared by the attention ops: head ratios and AttentionParams.
#pragma once

#include "ops/arg_checks.hpp"
#include "xhal/ops.hpp"
#include "xhal/plugin.h"

namespace xhal::ops {

// Hq must be a multiple of Hkv (MQA/GQA), and Hkv > 0 when Hq > 0.
void check_head_ratio(const ArgChecks& check, int64_t Hq, int64_t Hkv);
// Validates `params` and writes them to the call, defaulting scale to 1/sqrt(head_dim).
void set_attention_params(const ArgChecks& check, xhal_op_params& out, const AttentionParams& params,
                          int64_t head_dim);

}  // namespace xhal::ops

// Checks shared by the attention ops: the k/v pair, the output, head ratios and AttentionParams.
#pragma once

#include <string_view>

#include "ops/arg_checks.hpp"
#include "xhal/ops.hpp"
#include "xhal/plugin.h"

namespace xhal::ops {

// k has `rank` dims, q's dtype and head dim `head_dim` last; v matches k in every dim but the last.
void check_key_value(const ArgChecks& check, Arg k_name, const TensorView& k, Arg v_name, const TensorView& v, int rank,
                     const TensorView& q);
// The paged ops' caches: as check_key_value, or f8_e4m3 caches (KvCacheScales) when q is a float.
void check_cache_pair(const ArgChecks& check, Arg k_name, const TensorView& k_cache, Arg v_name,
                      const TensorView& v_cache, const TensorView& q);
// An fp8 cache's scales (f32, [1] or [Hkv], contiguous, on `device`): required when k_cache is
// f8_e4m3, refused otherwise.
void check_cache_scales(const ArgChecks& check, const TensorView& k_cache, Arg k_scale_slot, Arg v_scale_slot,
                        const KvCacheScales& scales, Device device, Arg device_from);
// out has q's rank and dtype, q's sizes in every dim but the last, and v's head dim last.
void check_attention_out(const ArgChecks& check, const TensorView& out, const TensorView& q, int64_t value_dim);
// Hq must be a multiple of Hkv (MQA/GQA), and Hkv > 0 when Hq > 0.
void check_head_ratio(const ArgChecks& check, int64_t Hq, int64_t Hkv);
// The varlen ops' cu_seqlens_q and cu_seqlens_k (i32, [B+1] each) and max_seqlen_q, max_seqlen_k
// (>= 0); the offsets themselves are read by the kernels.
void check_cu_seqlens(const ArgChecks& check, const TensorView& cu_seqlens_q, const TensorView& cu_seqlens_k,
                      int64_t max_seqlen_q, int64_t max_seqlen_k);
// cu_seqlens_q alone (i32, [B+1], B >= 0): paged_prefill's.
void check_cu_seqlens_q(const ArgChecks& check, Arg slot, const TensorView& cu_seqlens_q);
// The paged ops' block_table (i32 [B, max_blocks], rows may be strided) and seq_lens (i32 [B]);
// their values are read by the kernels.
void check_block_table(const ArgChecks& check, Arg table_slot, const TensorView& block_table, Arg lens_slot,
                       const TensorView& seq_lens, int64_t B, std::string_view batch_from);
// The packed layouts' lse: f32 [Hq, Tq] on `device`.
void check_packed_lse(const ArgChecks& check, Arg slot, const TensorView& lse, int64_t Hq, int64_t Tq, Device device,
                      Arg device_from);
// Validates `params` and gives the call's parameters, scale defaulted to 1/sqrt(head_dim).
xhal_attention_op_params attention_op_params(const ArgChecks& check, const AttentionParams& params, int64_t head_dim);

}  // namespace xhal::ops

#include "ops/attention_checks.hpp"

#include <cmath>

#include "core/text_format.hpp"

namespace xhal::ops {

void check_key_value(const ArgChecks& check, Arg k_name, const TensorView& k, Arg v_name, const TensorView& v, int rank,
                     const TensorView& q) {
  check.tensor(k_name, k, rank);
  check.dtype(k_name, k, q.dtype(), " (same as q)");
  check.dim(k_name, k, rank - 1, q.size(-1), "head dim of q");
  check.tensor(v_name, v, rank);
  check.dtype(v_name, v, q.dtype(), " (same as q)");
  for (int d = 0; d + 1 < rank; ++d) check.dim(v_name, v, d, k.size(d), check.name(k_name));
}

void check_cache_pair(const ArgChecks& check, Arg k_name, const TensorView& k_cache, Arg v_name,
                      const TensorView& v_cache, const TensorView& q) {
  check.tensor(k_name, k_cache, 4);
  if (k_cache.dtype() != DType::f8_e4m3 && k_cache.dtype() != q.dtype()) {
    check.fail(k_name,
               format_text("dtype {} (same as q) or f8_e4m3 (an fp8 cache, with scales)", dtype_name(q.dtype())),
               dtype_name(k_cache.dtype()));
  }
  if (k_cache.dtype() != DType::f8_e4m3) return check_key_value(check, k_name, k_cache, v_name, v_cache, 4, q);
  check.dim(k_name, k_cache, 3, q.size(-1), "head dim of q");
  check.tensor(v_name, v_cache, 4);
  check.dtype(v_name, v_cache, DType::f8_e4m3, " (same as k_cache)");
  for (int d = 0; d < 3; ++d) check.dim(v_name, v_cache, d, k_cache.size(d), check.name(k_name));
}

void check_cache_scales(const ArgChecks& check, const TensorView& k_cache, Arg k_scale_slot, Arg v_scale_slot,
                        const KvCacheScales& scales, Device device, Arg device_from) {
  const bool fp8 = k_cache.dtype() == DType::f8_e4m3;
  const int64_t Hkv = k_cache.size(2);
  for (auto [slot, scale] : {std::pair{k_scale_slot, scales.k}, {v_scale_slot, scales.v}}) {
    if (!fp8) {
      if (scale != nullptr) {
        check.fail(slot, "no scale (scales belong to an f8_e4m3 cache)",
                   format_text("a scale with a {} cache", dtype_name(k_cache.dtype())));
      }
      continue;
    }
    if (scale == nullptr) check.fail(slot, "a scale for the f8_e4m3 cache ([1] or [Hkv] f32)", "none");
    check.tensor(slot, *scale, 1);
    check.dtype(slot, *scale, DType::f32, " (scales are f32)");
    if (scale->size(0) != 1 && scale->size(0) != Hkv) {
      check.fail(slot, format_text("[1] (the whole cache) or [{}] (one a kv head)", Hkv),
                 format_text("[{}]", scale->size(0)));
    }
    check.same_device(slot, *scale, device, device_from);
  }
}

void check_attention_out(const ArgChecks& check, const TensorView& out, const TensorView& q, int64_t value_dim) {
  check.tensor(XHAL_ATTENTION_OUT, out, q.ndim());
  check.dtype(XHAL_ATTENTION_OUT, out, q.dtype(), " (same as q)");
  for (int d = 0; d + 1 < q.ndim(); ++d) check.dim(XHAL_ATTENTION_OUT, out, d, q.size(d), check.name(XHAL_ATTENTION_Q));
  check.dim(XHAL_ATTENTION_OUT, out, q.ndim() - 1, value_dim, "head dim of v");
}

void check_head_ratio(const ArgChecks& check, int64_t Hq, int64_t Hkv) {
  if ((Hq > 0 && Hkv == 0) || (Hkv > 0 && Hq % Hkv != 0)) {
    check.fail(XHAL_ATTENTION_K, format_text("a number of kv heads dividing the {} query heads (Hq % Hkv == 0)", Hq),
               format_text("{} kv heads", Hkv));
  }
}

xhal_attention_op_params attention_op_params(const ArgChecks& check, const AttentionParams& params, int64_t head_dim) {
  if (!std::isfinite(params.scale)) {
    check.fail("params.scale", "a finite number (0 = 1/sqrt(head dim))", format_text("{}", params.scale));
  }
  if (params.window_left < -1) {
    check.fail("params.window_left", ">= 0, or -1 for none", format_text("{}", params.window_left));
  }
  if (params.window_right < -1) {
    check.fail("params.window_right", ">= 0, or -1 for none", format_text("{}", params.window_right));
  }
  if (!(params.softcap >= 0) || !std::isfinite(params.softcap)) {
    check.fail("params.softcap", "a finite number >= 0 (0 = off)", format_text("{}", params.softcap));
  }
  xhal_attention_op_params out{};
  out.struct_size = sizeof out;
  out.scale = params.scale != 0.0f || head_dim == 0
                  ? params.scale
                  : static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
  out.causal = params.causal ? 1 : 0;
  out.window_left = params.window_left;
  out.window_right = params.window_right;
  out.softcap = params.softcap;
  return out;
}

void check_cu_seqlens_q(const ArgChecks& check, Arg slot, const TensorView& cu_seqlens_q) {
  check.tensor(slot, cu_seqlens_q, 1);
  check.dtype(slot, cu_seqlens_q, DType::i32, "");
  if (cu_seqlens_q.size(0) < 1) check.fail(slot, "B+1 >= 1 entries", "0 entries");
}

void check_cu_seqlens(const ArgChecks& check, const TensorView& cu_seqlens_q, const TensorView& cu_seqlens_k,
                      int64_t max_seqlen_q, int64_t max_seqlen_k) {
  check_cu_seqlens_q(check, XHAL_ATTENTION_VARLEN_CU_SEQLENS_Q, cu_seqlens_q);
  check.tensor(XHAL_ATTENTION_VARLEN_CU_SEQLENS_K, cu_seqlens_k, 1);
  check.dtype(XHAL_ATTENTION_VARLEN_CU_SEQLENS_K, cu_seqlens_k, DType::i32, "");
  check.dim(XHAL_ATTENTION_VARLEN_CU_SEQLENS_K, cu_seqlens_k, 0, cu_seqlens_q.size(0), "B+1, as cu_seqlens_q");
  if (max_seqlen_q < 0) check.fail("max_seqlen_q", ">= 0", format_text("{}", max_seqlen_q));
  if (max_seqlen_k < 0) check.fail("max_seqlen_k", ">= 0", format_text("{}", max_seqlen_k));
}

void check_block_table(const ArgChecks& check, Arg table_slot, const TensorView& block_table, Arg lens_slot,
                       const TensorView& seq_lens, int64_t B, std::string_view batch_from) {
  check.tensor(table_slot, block_table, 2, false);
  check.dtype(table_slot, block_table, DType::i32, "");
  check.dim(table_slot, block_table, 0, B, batch_from);
  check.tensor(lens_slot, seq_lens, 1, false);
  check.dtype(lens_slot, seq_lens, DType::i32, "");
  check.dim(lens_slot, seq_lens, 0, B, batch_from);
}

void check_packed_lse(const ArgChecks& check, Arg slot, const TensorView& lse, int64_t Hq, int64_t Tq, Device device,
                      Arg device_from) {
  check.tensor(slot, lse, 2, false);
  check.dtype(slot, lse, DType::f32, " (lse is always f32)");
  check.dim(slot, lse, 0, Hq, "query heads of q");
  check.dim(slot, lse, 1, Tq, "tokens of q");
  check.same_device(slot, lse, device, device_from);
}

}  // namespace xhal::ops

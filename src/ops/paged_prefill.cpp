// Front end of paged_prefill: attention_varlen's query side (q, out, lse, cu_seqlens_q) over
// paged_attention's cache side (caches, block_table, seq_lens). The offsets, block indices and
// lengths live in device memory; kernels check them where that is cheap (the CPU backend checks
// every one before writing), see docs/ops.md.
#include "ops/arg_checks.hpp"
#include "ops/attention_checks.hpp"
#include "ops/op_call.hpp"
#include "xhal/ops.hpp"

namespace xhal::ops {

void paged_prefill(const TensorView& q, const TensorView& k_cache, const TensorView& v_cache,
                   const TensorView& cu_seqlens_q, const TensorView& block_table, const TensorView& seq_lens,
                   int64_t max_seqlen_q, const TensorView& out, const AttentionParams& params, const TensorView* lse,
                   const KvCacheScales& scales, const Stream* stream) {
  const ArgChecks check(Op::paged_prefill);
  check.tensor(XHAL_PAGED_PREFILL_Q, q, 3);
  check.float_dtype(XHAL_PAGED_PREFILL_Q, q);
  const int64_t Tq = q.size(0), Hq = q.size(1), D = q.size(2);
  check_cache_pair(check, XHAL_PAGED_PREFILL_K_CACHE, k_cache, XHAL_PAGED_PREFILL_V_CACHE, v_cache, q);
  const int64_t block_size = k_cache.size(1), Hkv = k_cache.size(2);
  check_attention_out(check, out, q, v_cache.size(3));
  check_head_ratio(check, Hq, Hkv);
  check_cu_seqlens_q(check, XHAL_PAGED_PREFILL_CU_SEQLENS_Q, cu_seqlens_q);
  const int64_t B = cu_seqlens_q.size(0) - 1;
  check_block_table(check, XHAL_PAGED_PREFILL_BLOCK_TABLE, block_table, XHAL_PAGED_PREFILL_SEQ_LENS, seq_lens, B,
                    "B, as cu_seqlens_q's B+1");
  if (B > 0 && block_size == 0) check.fail(XHAL_PAGED_PREFILL_K_CACHE, "block size >= 1", "0");
  if (max_seqlen_q < 0) check.fail("max_seqlen_q", ">= 0", format_text("{}", max_seqlen_q));
  const Device device = out.device();
  for (auto [name, t] : {std::pair{XHAL_PAGED_PREFILL_Q, &q},
                         {XHAL_PAGED_PREFILL_K_CACHE, &k_cache},
                         {XHAL_PAGED_PREFILL_V_CACHE, &v_cache},
                         {XHAL_PAGED_PREFILL_CU_SEQLENS_Q, &cu_seqlens_q},
                         {XHAL_PAGED_PREFILL_BLOCK_TABLE, &block_table},
                         {XHAL_PAGED_PREFILL_SEQ_LENS, &seq_lens}}) {
    check.same_device(name, *t, device, XHAL_PAGED_PREFILL_OUT);
  }
  check_cache_scales(check, k_cache, XHAL_PAGED_PREFILL_K_SCALE, XHAL_PAGED_PREFILL_V_SCALE, scales, device,
                     XHAL_PAGED_PREFILL_OUT);
  if (lse != nullptr) check_packed_lse(check, XHAL_PAGED_PREFILL_LSE, *lse, Hq, Tq, device, XHAL_PAGED_PREFILL_OUT);
  const std::initializer_list<std::pair<Arg, const TensorView*>> inputs = {
      {XHAL_PAGED_PREFILL_Q, &q},
      {XHAL_PAGED_PREFILL_K_CACHE, &k_cache},
      {XHAL_PAGED_PREFILL_V_CACHE, &v_cache},
      {XHAL_PAGED_PREFILL_CU_SEQLENS_Q, &cu_seqlens_q},
      {XHAL_PAGED_PREFILL_BLOCK_TABLE, &block_table},
      {XHAL_PAGED_PREFILL_SEQ_LENS, &seq_lens}};
  check.apart(XHAL_PAGED_PREFILL_OUT, out, inputs);
  if (lse != nullptr) {
    check.apart(XHAL_PAGED_PREFILL_LSE, *lse, inputs);
    check.apart(XHAL_PAGED_PREFILL_LSE, *lse, {{XHAL_PAGED_PREFILL_OUT, &out}});
  }
  if (scales.k != nullptr) {
    for (const TensorView* written : {&out, lse}) {
      if (written == nullptr) continue;
      check.apart(written == &out ? XHAL_PAGED_PREFILL_OUT : XHAL_PAGED_PREFILL_LSE, *written,
                  {{XHAL_PAGED_PREFILL_K_SCALE, scales.k}, {XHAL_PAGED_PREFILL_V_SCALE, scales.v}});
    }
  }
  // An fp8 cache keys the kernel by its dtype: only kernels written for one see such a call.
  OpCall call(Op::paged_prefill, scales.k != nullptr ? k_cache.dtype() : q.dtype(), device, stream);
  xhal_attention_op_params op_params = attention_op_params(check, params, D);
  op_params.max_seqlen_q = max_seqlen_q;
  // The most keys a sequence can have: what the table addresses.
  if (__builtin_mul_overflow(block_table.size(1), block_size, &op_params.max_seqlen_k)) {
    check.fail(XHAL_PAGED_PREFILL_BLOCK_TABLE, "max_blocks * block_size below 2^63", "an overflow");
  }
  call.set_params(op_params);
  call.set(XHAL_PAGED_PREFILL_Q, q);
  call.set(XHAL_PAGED_PREFILL_K_CACHE, k_cache);
  call.set(XHAL_PAGED_PREFILL_V_CACHE, v_cache);
  call.set(XHAL_PAGED_PREFILL_OUT, out);
  call.set(XHAL_PAGED_PREFILL_LSE, lse);
  call.set(XHAL_PAGED_PREFILL_CU_SEQLENS_Q, cu_seqlens_q);
  call.set(XHAL_PAGED_PREFILL_BLOCK_TABLE, block_table);
  call.set(XHAL_PAGED_PREFILL_SEQ_LENS, seq_lens);
  call.set(XHAL_PAGED_PREFILL_K_SCALE, scales.k);
  call.set(XHAL_PAGED_PREFILL_V_SCALE, scales.v);
  call.run();
}

void paged_prefill(const TensorView& q, const TensorView& k_cache, const TensorView& v_cache,
                   const TensorView& cu_seqlens_q, const TensorView& block_table, const TensorView& seq_lens,
                   int64_t max_seqlen_q, const TensorView& out, const AttentionParams& params, const TensorView* lse,
                   const Stream* stream) {
  paged_prefill(q, k_cache, v_cache, cu_seqlens_q, block_table, seq_lens, max_seqlen_q, out, params, lse,
                KvCacheScales{}, stream);
}

}  // namespace xhal::ops

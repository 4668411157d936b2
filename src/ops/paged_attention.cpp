// Front end of paged_attention. Block indices and sequence lengths live in device memory; they are
// checked by kernels where that is cheap (the CPU backend checks every one), see docs/ops.md.
#include "ops/arg_checks.hpp"
#include "ops/attention_checks.hpp"
#include "ops/op_call.hpp"
#include "xhal/ops.hpp"

namespace xhal::ops {

void paged_attention(const TensorView& q, const TensorView& k_cache, const TensorView& v_cache,
                     const TensorView& block_table, const TensorView& seq_lens, const TensorView& out,
                     const AttentionParams& params, const KvCacheScales& scales, const Stream* stream) {
  const ArgChecks check(Op::paged_attention);
  check.tensor(XHAL_PAGED_ATTENTION_Q, q, 3);
  check.float_dtype(XHAL_PAGED_ATTENTION_Q, q);
  const int64_t B = q.size(0), Hq = q.size(1), D = q.size(2);
  check_cache_pair(check, XHAL_PAGED_ATTENTION_K_CACHE, k_cache, XHAL_PAGED_ATTENTION_V_CACHE, v_cache, q);
  const int64_t block_size = k_cache.size(1), Hkv = k_cache.size(2);
  check_attention_out(check, out, q, v_cache.size(3));
  check_head_ratio(check, Hq, Hkv);
  check_block_table(check, XHAL_PAGED_ATTENTION_BLOCK_TABLE, block_table, XHAL_PAGED_ATTENTION_SEQ_LENS, seq_lens, B,
                    "batch of q");
  if (B > 0 && block_size == 0) check.fail(XHAL_PAGED_ATTENTION_K_CACHE, "block size >= 1", "0");
  const Device device = out.device();
  for (auto [name, t] : {std::pair{XHAL_PAGED_ATTENTION_Q, &q},
                         {XHAL_PAGED_ATTENTION_K_CACHE, &k_cache},
                         {XHAL_PAGED_ATTENTION_V_CACHE, &v_cache},
                         {XHAL_PAGED_ATTENTION_BLOCK_TABLE, &block_table},
                         {XHAL_PAGED_ATTENTION_SEQ_LENS, &seq_lens}}) {
    check.same_device(name, *t, device, XHAL_PAGED_ATTENTION_OUT);
  }
  check_cache_scales(check, k_cache, XHAL_PAGED_ATTENTION_K_SCALE, XHAL_PAGED_ATTENTION_V_SCALE, scales, device,
                     XHAL_PAGED_ATTENTION_OUT);
  check.apart(XHAL_PAGED_ATTENTION_OUT, out,
              {{XHAL_PAGED_ATTENTION_Q, &q},
               {XHAL_PAGED_ATTENTION_K_CACHE, &k_cache},
               {XHAL_PAGED_ATTENTION_V_CACHE, &v_cache},
               {XHAL_PAGED_ATTENTION_BLOCK_TABLE, &block_table},
               {XHAL_PAGED_ATTENTION_SEQ_LENS, &seq_lens}});
  if (scales.k != nullptr) {
    check.apart(XHAL_PAGED_ATTENTION_OUT, out,
                {{XHAL_PAGED_ATTENTION_K_SCALE, scales.k}, {XHAL_PAGED_ATTENTION_V_SCALE, scales.v}});
  }
  // An fp8 cache keys the kernel by its dtype: only kernels written for one see such a call.
  OpCall call(Op::paged_attention, scales.k != nullptr ? k_cache.dtype() : q.dtype(), device, stream);
  const xhal_attention_op_params op_params = attention_op_params(check, params, D);
  call.set_params(op_params);
  call.set(XHAL_PAGED_ATTENTION_Q, q);
  call.set(XHAL_PAGED_ATTENTION_K_CACHE, k_cache);
  call.set(XHAL_PAGED_ATTENTION_V_CACHE, v_cache);
  call.set(XHAL_PAGED_ATTENTION_OUT, out);
  call.set(XHAL_PAGED_ATTENTION_BLOCK_TABLE, block_table);
  call.set(XHAL_PAGED_ATTENTION_SEQ_LENS, seq_lens);
  call.set(XHAL_PAGED_ATTENTION_K_SCALE, scales.k);
  call.set(XHAL_PAGED_ATTENTION_V_SCALE, scales.v);
  call.run();
}

void paged_attention(const TensorView& q, const TensorView& k_cache, const TensorView& v_cache,
                     const TensorView& block_table, const TensorView& seq_lens, const TensorView& out,
                     const AttentionParams& params, const Stream* stream) {
  paged_attention(q, k_cache, v_cache, block_table, seq_lens, out, params, KvCacheScales{}, stream);
}

}  // namespace xhal::ops

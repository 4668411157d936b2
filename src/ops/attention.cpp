// Front ends of attention and attention_varlen.
#include <cmath>

#include "ops/arg_checks.hpp"
#include "ops/attention_checks.hpp"
#include "ops/op_call.hpp"
#include "xhal/ops.hpp"

namespace xhal::ops {

void attention(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& out,
               const AttentionParams& params, const TensorView* lse, const Stream* stream) {
  const ArgChecks check(Op::attention);
  check.tensor(XHAL_ATTENTION_Q, q, 4);
  check.float_dtype(XHAL_ATTENTION_Q, q);
  const int64_t B = q.size(0), Sq = q.size(1), Hq = q.size(2), D = q.size(3);
  check_key_value(check, XHAL_ATTENTION_K, k, XHAL_ATTENTION_V, v, 4, q);
  check.dim(XHAL_ATTENTION_K, k, 0, B, "batch of q");
  const int64_t Hkv = k.size(2);
  check_attention_out(check, out, q, v.size(3));
  check_head_ratio(check, Hq, Hkv);
  const Device device = out.device();
  for (auto [name, t] : {std::pair{XHAL_ATTENTION_Q, &q}, {XHAL_ATTENTION_K, &k}, {XHAL_ATTENTION_V, &v}}) {
    check.same_device(name, *t, device, XHAL_ATTENTION_OUT);
  }
  if (lse != nullptr) {
    check.tensor(XHAL_ATTENTION_LSE, *lse, 3, false);
    check.dtype(XHAL_ATTENTION_LSE, *lse, DType::f32, " (lse is always f32)");
    check.dim(XHAL_ATTENTION_LSE, *lse, 0, B, "batch of q");
    check.dim(XHAL_ATTENTION_LSE, *lse, 1, Hq, "query heads of q");
    check.dim(XHAL_ATTENTION_LSE, *lse, 2, Sq, "query length of q");
    check.same_device(XHAL_ATTENTION_LSE, *lse, device, XHAL_ATTENTION_OUT);
  }
  check.apart(XHAL_ATTENTION_OUT, out,
              {{XHAL_ATTENTION_Q, &q}, {XHAL_ATTENTION_K, &k}, {XHAL_ATTENTION_V, &v}, {XHAL_ATTENTION_LSE, lse}});
  if (lse != nullptr)
    check.apart(XHAL_ATTENTION_LSE, *lse, {{XHAL_ATTENTION_Q, &q}, {XHAL_ATTENTION_K, &k}, {XHAL_ATTENTION_V, &v}});
  OpCall call(Op::attention, q.dtype(), device, stream);
  const xhal_attention_op_params op_params = attention_op_params(check, params, D);
  call.set_params(op_params);
  call.set(XHAL_ATTENTION_Q, q);
  call.set(XHAL_ATTENTION_K, k);
  call.set(XHAL_ATTENTION_V, v);
  call.set(XHAL_ATTENTION_OUT, out);
  call.set(XHAL_ATTENTION_LSE, lse);
  call.run();
}

void attention_varlen(const TensorView& q, const TensorView& k, const TensorView& v, const TensorView& cu_seqlens_q,
                      const TensorView& cu_seqlens_k, int64_t max_seqlen_q, int64_t max_seqlen_k, const TensorView& out,
                      const AttentionParams& params, const TensorView* lse, const Stream* stream) {
  const ArgChecks check(Op::attention_varlen);
  check.tensor(XHAL_ATTENTION_Q, q, 3);
  check.float_dtype(XHAL_ATTENTION_Q, q);
  const int64_t Tq = q.size(0), Hq = q.size(1), D = q.size(2);
  check_key_value(check, XHAL_ATTENTION_K, k, XHAL_ATTENTION_V, v, 3, q);
  const int64_t Hkv = k.size(1);
  check_attention_out(check, out, q, v.size(2));
  check_head_ratio(check, Hq, Hkv);
  check_cu_seqlens(check, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k);
  const Device device = out.device();
  for (auto [name, t] : {std::pair{XHAL_ATTENTION_Q, &q},
                         {XHAL_ATTENTION_K, &k},
                         {XHAL_ATTENTION_V, &v},
                         {XHAL_ATTENTION_VARLEN_CU_SEQLENS_Q, &cu_seqlens_q},
                         {XHAL_ATTENTION_VARLEN_CU_SEQLENS_K, &cu_seqlens_k}}) {
    check.same_device(name, *t, device, XHAL_ATTENTION_OUT);
  }
  if (lse != nullptr) check_packed_lse(check, XHAL_ATTENTION_LSE, *lse, Hq, Tq, device, XHAL_ATTENTION_OUT);
  check.apart(XHAL_ATTENTION_OUT, out,
              {{XHAL_ATTENTION_Q, &q},
               {XHAL_ATTENTION_K, &k},
               {XHAL_ATTENTION_V, &v},
               {XHAL_ATTENTION_VARLEN_CU_SEQLENS_Q, &cu_seqlens_q},
               {XHAL_ATTENTION_VARLEN_CU_SEQLENS_K, &cu_seqlens_k},
               {XHAL_ATTENTION_LSE, lse}});
  if (lse != nullptr) {
    check.apart(XHAL_ATTENTION_LSE, *lse,
                {{XHAL_ATTENTION_Q, &q},
                 {XHAL_ATTENTION_K, &k},
                 {XHAL_ATTENTION_V, &v},
                 {XHAL_ATTENTION_VARLEN_CU_SEQLENS_Q, &cu_seqlens_q},
                 {XHAL_ATTENTION_VARLEN_CU_SEQLENS_K, &cu_seqlens_k}});
  }
  OpCall call(Op::attention_varlen, q.dtype(), device, stream);
  xhal_attention_op_params op_params = attention_op_params(check, params, D);
  op_params.max_seqlen_q = max_seqlen_q;
  op_params.max_seqlen_k = max_seqlen_k;
  call.set_params(op_params);
  call.set(XHAL_ATTENTION_Q, q);
  call.set(XHAL_ATTENTION_K, k);
  call.set(XHAL_ATTENTION_V, v);
  call.set(XHAL_ATTENTION_OUT, out);
  call.set(XHAL_ATTENTION_LSE, lse);
  call.set(XHAL_ATTENTION_VARLEN_CU_SEQLENS_Q, cu_seqlens_q);
  call.set(XHAL_ATTENTION_VARLEN_CU_SEQLENS_K, cu_seqlens_k);
  call.run();
}

}  // namespace xhal::ops

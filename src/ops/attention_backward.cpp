// Front ends of attention_backward and attention_varlen_backward: the forward's arguments (checked
// as the forward checks them), its out and lse, dout of out's shape, and the gradients of q, k and
// v in their shapes.

#include "ops/arg_checks.hpp"
#include "ops/attention_checks.hpp"
#include "ops/op_call.hpp"
#include "xhal/ops.hpp"

namespace xhal::ops {
namespace {

// A backward call with kv heads but no query head would have dk and dv of zeros to write and no
// query to derive them from: refused (the forward allows it, its outputs being empty).
void check_query_heads(const ArgChecks& check, int64_t Hq, int64_t Hkv) {
  if (Hq == 0 && Hkv > 0) {
    check.fail(XHAL_ATTENTION_BACKWARD_Q, "at least one query head when k has kv heads", "0 query heads");
  }
}

// The tensors both ops share beyond q, k, v and the forward's own checks.
struct Gradients {
  const TensorView &dout, &dq, &dk, &dv;
};

// dout has out's shape, dq q's, dk k's, dv v's; all on out's device; the gradients apart from
// every input and from each other.
void check_gradients(const ArgChecks& check, const Gradients& g, const TensorView& q, const TensorView& k,
                     const TensorView& v, const TensorView& out, const TensorView& lse,
                     std::initializer_list<std::pair<Arg, const TensorView*>> more_inputs) {
  const Device device = out.device();
  for (const auto& [slot, grad, like, like_slot] :
       {std::tuple{XHAL_ATTENTION_BACKWARD_DOUT, &g.dout, &out, XHAL_ATTENTION_BACKWARD_OUT},
        std::tuple{XHAL_ATTENTION_BACKWARD_DQ, &g.dq, &q, XHAL_ATTENTION_BACKWARD_Q},
        std::tuple{XHAL_ATTENTION_BACKWARD_DK, &g.dk, &k, XHAL_ATTENTION_BACKWARD_K},
        std::tuple{XHAL_ATTENTION_BACKWARD_DV, &g.dv, &v, XHAL_ATTENTION_BACKWARD_V}}) {
    check.tensor(slot, *grad, like->ndim());
    check.dtype(slot, *grad, q.dtype(), " (same as q)");
    check.same_shape(slot, *grad, *like, like_slot);
    check.same_device(slot, *grad, device, XHAL_ATTENTION_BACKWARD_OUT);
  }
  for (const auto& [slot, t] : {std::pair{XHAL_ATTENTION_BACKWARD_Q, &q},
                                {XHAL_ATTENTION_BACKWARD_K, &k},
                                {XHAL_ATTENTION_BACKWARD_V, &v},
                                {XHAL_ATTENTION_BACKWARD_LSE, &lse}}) {
    check.same_device(slot, *t, device, XHAL_ATTENTION_BACKWARD_OUT);
  }
  for (const auto& [slot, grad] : {std::pair{XHAL_ATTENTION_BACKWARD_DQ, &g.dq},
                                   {XHAL_ATTENTION_BACKWARD_DK, &g.dk},
                                   {XHAL_ATTENTION_BACKWARD_DV, &g.dv}}) {
    check.apart(slot, *grad,
                {{XHAL_ATTENTION_BACKWARD_DOUT, &g.dout},
                 {XHAL_ATTENTION_BACKWARD_Q, &q},
                 {XHAL_ATTENTION_BACKWARD_K, &k},
                 {XHAL_ATTENTION_BACKWARD_V, &v},
                 {XHAL_ATTENTION_BACKWARD_OUT, &out},
                 {XHAL_ATTENTION_BACKWARD_LSE, &lse}});
    check.apart(slot, *grad, more_inputs);
  }
  check.apart(XHAL_ATTENTION_BACKWARD_DQ, g.dq,
              {{XHAL_ATTENTION_BACKWARD_DK, &g.dk}, {XHAL_ATTENTION_BACKWARD_DV, &g.dv}});
  check.apart(XHAL_ATTENTION_BACKWARD_DK, g.dk, {{XHAL_ATTENTION_BACKWARD_DV, &g.dv}});
}

void check_lse(const ArgChecks& check, const TensorView& lse,
               std::initializer_list<std::pair<int64_t, const char*>> dims) {
  check.tensor(XHAL_ATTENTION_BACKWARD_LSE, lse, int(dims.size()), false);
  check.dtype(XHAL_ATTENTION_BACKWARD_LSE, lse, DType::f32, " (lse is always f32)");
  int d = 0;
  for (const auto& [size, meaning] : dims) check.dim(XHAL_ATTENTION_BACKWARD_LSE, lse, d++, size, meaning);
}

void set_tensors(OpCall& call, const Gradients& g, const TensorView& q, const TensorView& k, const TensorView& v,
                 const TensorView& out, const TensorView& lse) {
  call.set(XHAL_ATTENTION_BACKWARD_DOUT, g.dout);
  call.set(XHAL_ATTENTION_BACKWARD_Q, q);
  call.set(XHAL_ATTENTION_BACKWARD_K, k);
  call.set(XHAL_ATTENTION_BACKWARD_V, v);
  call.set(XHAL_ATTENTION_BACKWARD_OUT, out);
  call.set(XHAL_ATTENTION_BACKWARD_LSE, lse);
  call.set(XHAL_ATTENTION_BACKWARD_DQ, g.dq);
  call.set(XHAL_ATTENTION_BACKWARD_DK, g.dk);
  call.set(XHAL_ATTENTION_BACKWARD_DV, g.dv);
}

}  // namespace

void attention_backward(const TensorView& dout, const TensorView& q, const TensorView& k, const TensorView& v,
                        const TensorView& out, const TensorView& lse, const TensorView& dq, const TensorView& dk,
                        const TensorView& dv, const AttentionParams& params, const Stream* stream) {
  static_assert(XHAL_ATTENTION_BACKWARD_Q == XHAL_ATTENTION_Q && XHAL_ATTENTION_BACKWARD_K == XHAL_ATTENTION_K &&
                XHAL_ATTENTION_BACKWARD_V == XHAL_ATTENTION_V && XHAL_ATTENTION_BACKWARD_OUT == XHAL_ATTENTION_OUT &&
                XHAL_ATTENTION_BACKWARD_LSE == XHAL_ATTENTION_LSE);
  const ArgChecks check(Op::attention_backward);
  check.tensor(XHAL_ATTENTION_BACKWARD_Q, q, 4);
  check.float_dtype(XHAL_ATTENTION_BACKWARD_Q, q);
  const int64_t B = q.size(0), Sq = q.size(1), Hq = q.size(2), D = q.size(3);
  check_key_value(check, XHAL_ATTENTION_BACKWARD_K, k, XHAL_ATTENTION_BACKWARD_V, v, 4, q);
  check.dim(XHAL_ATTENTION_BACKWARD_K, k, 0, B, "batch of q");
  check_attention_out(check, out, q, v.size(3));
  check_head_ratio(check, Hq, k.size(2));
  check_query_heads(check, Hq, k.size(2));
  check_lse(check, lse, {{B, "batch of q"}, {Hq, "query heads of q"}, {Sq, "query length of q"}});
  const Gradients g{dout, dq, dk, dv};
  check_gradients(check, g, q, k, v, out, lse, {});
  OpCall call(Op::attention_backward, q.dtype(), out.device(), stream);
  const xhal_attention_op_params op_params = attention_op_params(check, params, D);
  call.set_params(op_params);
  set_tensors(call, g, q, k, v, out, lse);
  call.run();
}

void attention_varlen_backward(const TensorView& dout, const TensorView& q, const TensorView& k, const TensorView& v,
                               const TensorView& cu_seqlens_q, const TensorView& cu_seqlens_k, int64_t max_seqlen_q,
                               int64_t max_seqlen_k, const TensorView& out, const TensorView& lse, const TensorView& dq,
                               const TensorView& dk, const TensorView& dv, const AttentionParams& params,
                               const Stream* stream) {
  static_assert(XHAL_ATTENTION_VARLEN_BACKWARD_CU_SEQLENS_Q == XHAL_ATTENTION_VARLEN_CU_SEQLENS_Q &&
                XHAL_ATTENTION_VARLEN_BACKWARD_CU_SEQLENS_K == XHAL_ATTENTION_VARLEN_CU_SEQLENS_K &&
                XHAL_ATTENTION_VARLEN_BACKWARD_DQ == XHAL_ATTENTION_BACKWARD_DQ &&
                XHAL_ATTENTION_VARLEN_BACKWARD_DOUT == XHAL_ATTENTION_BACKWARD_DOUT);
  const ArgChecks check(Op::attention_varlen_backward);
  check.tensor(XHAL_ATTENTION_BACKWARD_Q, q, 3);
  check.float_dtype(XHAL_ATTENTION_BACKWARD_Q, q);
  const int64_t Tq = q.size(0), Hq = q.size(1), D = q.size(2);
  check_key_value(check, XHAL_ATTENTION_BACKWARD_K, k, XHAL_ATTENTION_BACKWARD_V, v, 3, q);
  check_attention_out(check, out, q, v.size(2));
  check_head_ratio(check, Hq, k.size(1));
  check_query_heads(check, Hq, k.size(1));
  check_lse(check, lse, {{Hq, "query heads of q"}, {Tq, "tokens of q"}});
  check_cu_seqlens(check, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k);
  for (const auto& [slot, t] : {std::pair{XHAL_ATTENTION_VARLEN_BACKWARD_CU_SEQLENS_Q, &cu_seqlens_q},
                                {XHAL_ATTENTION_VARLEN_BACKWARD_CU_SEQLENS_K, &cu_seqlens_k}}) {
    check.same_device(slot, *t, out.device(), XHAL_ATTENTION_BACKWARD_OUT);
  }
  const Gradients g{dout, dq, dk, dv};
  check_gradients(check, g, q, k, v, out, lse,
                  {{XHAL_ATTENTION_VARLEN_BACKWARD_CU_SEQLENS_Q, &cu_seqlens_q},
                   {XHAL_ATTENTION_VARLEN_BACKWARD_CU_SEQLENS_K, &cu_seqlens_k}});
  OpCall call(Op::attention_varlen_backward, q.dtype(), out.device(), stream);
  xhal_attention_op_params op_params = attention_op_params(check, params, D);
  op_params.max_seqlen_q = max_seqlen_q;
  op_params.max_seqlen_k = max_seqlen_k;
  call.set_params(op_params);
  set_tensors(call, g, q, k, v, out, lse);
  call.set(XHAL_ATTENTION_VARLEN_BACKWARD_CU_SEQLENS_Q, cu_seqlens_q);
  call.set(XHAL_ATTENTION_VARLEN_BACKWARD_CU_SEQLENS_K, cu_seqlens_k);
  call.run();
}

}  // namespace xhal::ops

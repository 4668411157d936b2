// attention and attention_varlen on the CPU, the reference kernels: tasks of (sequence, kv head,
// query tile) in parallel (attention_tasks.hpp), each running the blocked online-softmax core.
#include <vector>

#include "attention_core.hpp"
#include "attention_tasks.hpp"

namespace xhal::cpu {
namespace {

// Runs the blocked online-softmax core (attention_core.hpp) on every task.
template <class E>
void attend_spans(const std::vector<SequenceSpan>& seqs, bool batched, const xhal_op_call* c) {
  const MaskParams mask = MaskParams::from(c->params);
  for_each_attention_task<typename E::Storage>(
      seqs, batched, c, kQueryTile,
      [&](int64_t group, int64_t i0, int64_t i1, int64_t Sq, int64_t Sk, int64_t D, int64_t Dv, auto q, auto k,
          auto v, auto out, auto lse) { attend_group<E>(group, i0, i1, Sq, Sk, D, Dv, mask, q, k, v, out, lse); });
}

template <class E>
struct AttentionKernel {
  static xhal_status run(const xhal_op_call* c, char*, size_t) {
    attend_spans<E>(batched_spans(c), true, c);
    return XHAL_OK;
  }
};

template <class E>
struct AttentionVarlenKernel {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    std::vector<SequenceSpan> seqs;
    if (const xhal_status s = varlen_spans(c, msg, len, &seqs); s != XHAL_OK) return s;
    attend_spans<E>(seqs, false, c);
    return XHAL_OK;
  }
};

}  // namespace

void register_attention_kernels(const xhal_host_api* host) {
  register_float_kernels<AttentionKernel>(host, "cpu.attention", XHAL_OP_ATTENTION);
  register_float_kernels<AttentionVarlenKernel>(host, "cpu.attention_varlen", XHAL_OP_ATTENTION_VARLEN);
}

}  // namespace xhal::cpu

// attention, attention_varlen and paged_prefill on the CPU, the reference kernels: tasks of (sequence, kv head,
// query tile) in parallel (attention_tasks.hpp), each running the blocked online-softmax core.
#include <vector>

#include "attention_core.hpp"
#include "attention_tasks.hpp"

namespace xhal::cpu {
namespace {

// Runs the blocked online-softmax core (attention_core.hpp) on every task, each thread in its own
// workspace.
template <class E>
xhal_status attend_spans(const std::vector<SequenceSpan>& seqs, const xhal_op_call* c, char* msg, size_t len) {
  const bool batched = c->op == XHAL_OP_ATTENTION;
  const MaskParams mask = MaskParams::from(c->params);
  const AttentionRows<typename E::Storage> at(c, seqs, batched);
  const auto tasks = all_attention_tasks(at, kQueryTile);
  const int64_t n = at.q.size(-2) == 0 ? 0 : at.group() * tasks.max_rows(), D = at.q.size(-1), Dv = at.v.size(-1);
  const ThreadWorkspaces workspaces(c, CoreBuffers::bytes(n, tasks.max_keys(), D, Dv), tasks.count());
  if (!workspaces.ok()) return workspaces_refused(msg, len, forward_op_name(c), workspaces.bytes_each());
  tasks.run(workspaces.threads(), [&](int64_t, int64_t group, int64_t i0, int64_t i1, int64_t Sq, int64_t Sk, int64_t,
                                      int64_t, auto q, auto k, auto v, auto out, auto lse) {
    Carver carver(workspaces.of_this_thread());
    const CoreBuffers w = CoreBuffers::carve(carver, n, CoreBuffers::keys_for(tasks.max_keys()), D, Dv);
    attend_group<E>(group, i0, i1, Sq, Sk, D, Dv, mask, q, k, v, out, lse, w);
  });
  return XHAL_OK;
}

template <class E>
struct AttentionKernel {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    std::vector<SequenceSpan> seqs;
    if (const xhal_status s = forward_spans(c, msg, len, &seqs); s != XHAL_OK) return s;
    return attend_spans<E>(seqs, c, msg, len);
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<AttentionKernel>(host, "cpu.attention", XHAL_OP_ATTENTION);
  register_float_kernels<AttentionKernel>(host, "cpu.attention_varlen", XHAL_OP_ATTENTION_VARLEN);
  register_float_kernels<AttentionKernel>(host, "cpu.paged_prefill", XHAL_OP_PAGED_PREFILL);
}

}  // namespace xhal::cpu

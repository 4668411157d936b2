// attention_backward and attention_varlen_backward on the CPU, the reference kernels: one task per
// (sequence, kv head), in parallel, each the reference computation of attention_backward_pairs.hpp.
#include <vector>

#include "attention_backward_pairs.hpp"

namespace xhal::cpu {
namespace {

template <class E>
xhal_status backward_spans(const std::vector<SequenceSpan>& seqs, bool batched, const xhal_op_call* c, char* msg,
                           size_t len) {
  using S = typename E::Storage;
  return run_backward_pairs<E>(
      c, seqs, batched,
      [](const BackwardCall<S>& call, int64_t max_keys) {
        return ReferenceBuffers::bytes(max_keys, call.group * kQueryTile, call.D, call.Dv);
      },
      [](const BackwardCall<S>& call, int64_t b, int64_t h, void* workspace, int64_t max_keys) {
        Carver carver(workspace);
        reference_pair<E>(call, b, h,
                          ReferenceBuffers::carve(carver, max_keys, call.group * kQueryTile, call.D, call.Dv));
      },
      msg, len);
}

template <class E>
struct AttentionBackwardKernel {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    return backward_spans<E>(batched_spans(c), true, c, msg, len);
  }
};

template <class E>
struct AttentionVarlenBackwardKernel {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    std::vector<SequenceSpan> seqs;
    if (const xhal_status s = varlen_spans(c, msg, len, &seqs); s != XHAL_OK) return s;
    return backward_spans<E>(seqs, false, c, msg, len);
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<AttentionBackwardKernel>(host, "cpu.attention_backward", XHAL_OP_ATTENTION_BACKWARD);
  register_float_kernels<AttentionVarlenBackwardKernel>(host, "cpu.attention_varlen_backward",
                                                        XHAL_OP_ATTENTION_VARLEN_BACKWARD);
}

}  // namespace xhal::cpu

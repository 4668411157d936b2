// attention and attention_varlen on the CPU: tasks of (sequence, kv head, query tile) run in
// parallel with OpenMP; each runs the blocked online-softmax core.
#include <tuple>
#include <vector>

#include "attention_core.hpp"
#include "kernel_registration.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {
namespace {

// Runs attend_group over all (sequence, kv head, query tile) tasks. Sequence b covers query rows
// [q_begin[b], q_begin[b] + Sq_b) of the packed or batched layout, likewise for keys.
struct SequenceSpan {
  int64_t q_begin, Sq, k_begin, Sk;
};

template <class E>
struct AttentionKernel {
  using S = typename E::Storage;

  // Batched: q[B,Sq,Hq,D] etc. Varlen: q[Tq,Hq,D] treated as batch 1 with per-sequence spans.
  static void run_spans(const std::vector<SequenceSpan>& seqs, bool batched, const xhal_op_call* c) {
    const TensorRef<const S> q(c->t[XHAL_SLOT_Q]), k(c->t[XHAL_SLOT_K]), v(c->t[XHAL_SLOT_V]);
    const TensorRef<S> out(c->t[XHAL_SLOT_OUT]);
    const TensorRef<float> lse(c->t[XHAL_SLOT_LSE]);
    const int64_t Hq = q.size(-2), Hkv = k.size(-2), D = q.size(-1), Dv = v.size(-1);
    if (Hq == 0) return;
    const int64_t group = Hq / Hkv;
    const MaskParams mask = MaskParams::from(c->params);
    struct Task {
      int64_t seq, hkv, i0;
    };
    std::vector<Task> tasks;
    for (int64_t b = 0; b < int64_t(seqs.size()); ++b) {
      for (int64_t h = 0; h < Hkv; ++h) {
        for (int64_t i0 = 0; i0 < seqs[size_t(b)].Sq; i0 += kQueryTile) tasks.push_back({b, h, i0});
      }
    }
#pragma omp parallel for schedule(dynamic)
    for (int64_t t = 0; t < int64_t(tasks.size()); ++t) {
      const Task task = tasks[size_t(t)];
      const SequenceSpan& seq = seqs[size_t(task.seq)];
      const int64_t b = batched ? task.seq : 0;
      const int64_t hq0 = task.hkv * group;
      // Index helpers: batched tensors have a leading batch dim, packed ones do not.
      auto row = [&](const auto& ref, int64_t token, int64_t head) {
        return batched ? ref.at(b, token, head, 0) : ref.at(token, head, 0);
      };
      attend_group<E>(
          group, task.i0, std::min(task.i0 + kQueryTile, seq.Sq), seq.Sq, seq.Sk, D, Dv, mask,
          [&](int64_t g, int64_t i) { return row(q, seq.q_begin + i, hq0 + g); },
          [&](int64_t j) { return row(k, seq.k_begin + j, task.hkv); },
          [&](int64_t j) { return row(v, seq.k_begin + j, task.hkv); },
          [&](int64_t g, int64_t i) { return row(out, seq.q_begin + i, hq0 + g); },
          [&](int64_t g, int64_t i) -> float* {
            if (!lse) return nullptr;
            return batched ? lse.at(b, hq0 + g, i) : lse.at(hq0 + g, seq.q_begin + i);
          });
    }
  }

  static xhal_status run(const xhal_op_call* c, char*, size_t) {
    const TensorRef<const S> q(c->t[XHAL_SLOT_Q]), k(c->t[XHAL_SLOT_K]);
    std::vector<SequenceSpan> seqs(size_t(q.size(0)), SequenceSpan{0, q.size(1), 0, k.size(1)});
    run_spans(seqs, true, c);
    return XHAL_OK;
  }
};

template <class E>
struct AttentionVarlenKernel {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    const TensorRef<const int32_t> cu_q(c->t[XHAL_SLOT_CU_SEQLENS_Q]), cu_k(c->t[XHAL_SLOT_CU_SEQLENS_K]);
    const int64_t Tq = c->t[XHAL_SLOT_Q]->shape[0], Tk = c->t[XHAL_SLOT_K]->shape[0];
    const int64_t batch = cu_q.size(0) - 1;
    std::vector<SequenceSpan> seqs;
    for (const auto& [name, cu, total, max_len] :
         {std::tuple{"cu_seqlens_q", &cu_q, Tq, c->params.max_seqlen_q},
          std::tuple{"cu_seqlens_k", &cu_k, Tk, c->params.max_seqlen_k}}) {
      if (*cu->at(0) != 0) {
        return kernel_error(msg, len, XHAL_ERR_INVALID_ARGUMENT, "argument '%s': expected [0] == 0, got %d",
                            name, *cu->at(0));
      }
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t begin = *cu->at(b), end = *cu->at(b + 1);
        if (end < begin || end > total || end - begin > max_len) {
          return kernel_error(msg, len, XHAL_ERR_INVALID_ARGUMENT,
                              "argument '%s': expected non-decreasing offsets within %lld tokens and "
                              "sequence lengths <= max_seqlen %lld, got [%lld] = %lld, [%lld] = %lld",
                              name, (long long)total, (long long)max_len, (long long)b,
                              (long long)begin, (long long)(b + 1), (long long)end);
        }
      }
    }
    for (int64_t b = 0; b < batch; ++b) {
      seqs.push_back({*cu_q.at(b), *cu_q.at(b + 1) - *cu_q.at(b), *cu_k.at(b),
                      *cu_k.at(b + 1) - *cu_k.at(b)});
    }
    AttentionKernel<E>::run_spans(seqs, false, c);
    return XHAL_OK;
  }
};

}  // namespace

void register_attention_kernels(const xhal_host_api* host) {
  register_float_kernels<AttentionKernel>(host, "cpu.attention", XHAL_OP_ATTENTION);
  register_float_kernels<AttentionVarlenKernel>(host, "cpu.attention_varlen", XHAL_OP_ATTENTION_VARLEN);
}

}  // namespace xhal::cpu

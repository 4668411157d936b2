// How the CPU's attention kernels split attention and attention_varlen into tasks: one per
// (sequence, kv head, tile of query rows), run in parallel with OpenMP, each handed accessors to
// its rows (the layout-specific indexing lives here once). Shared by the reference kernel
// (attention.cpp), the BLAS one (attention_blas.cpp) and the AMX one, which differ in the core
// they run.
#pragma once

#include <algorithm>
#include <tuple>
#include <vector>

#include "kernel_registration.hpp"
#include "paged_attention_checks.hpp"
#include "region_errors.hpp"
#include "scratch.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {

// Sequence b covers query rows [q_begin, q_begin + Sq) of the packed or batched layout, likewise
// for keys.
struct SequenceSpan {
  int64_t q_begin, Sq, k_begin, Sk;
};

// Query heads per kv head (GQA's group; 0 when there are no kv heads).
inline int64_t query_group(const xhal_op_call* c) {
  const int64_t Hkv = c->tensors[XHAL_ATTENTION_K]->shape[c->tensors[XHAL_ATTENTION_K]->ndim - 2];
  return Hkv == 0 ? 0 : c->tensors[XHAL_ATTENTION_Q]->shape[c->tensors[XHAL_ATTENTION_Q]->ndim - 2] / Hkv;
}

// Batched attention (q[B,Sq,Hq,D]): one span per batch entry.
inline std::vector<SequenceSpan> batched_spans(const xhal_op_call* c) {
  return std::vector<SequenceSpan>(
      size_t(c->tensors[XHAL_ATTENTION_Q]->shape[0]),
      SequenceSpan{0, c->tensors[XHAL_ATTENTION_Q]->shape[1], 0, c->tensors[XHAL_ATTENTION_K]->shape[1]});
}

// Offsets cu[B+1] of packed sequences: [0] == 0, non-decreasing, within `total` tokens, each
// sequence at most max_len long.
inline xhal_status check_offsets(char* msg, size_t len, const char* name, const TensorRef<const int32_t>& cu,
                                 int64_t total, int64_t max_len) {
  if (*cu.at(0) != 0) {
    return kernel_error(msg, len, XHAL_ERR_INVALID_ARGUMENT, "argument '%s': expected [0] == 0, got %d", name,
                        *cu.at(0));
  }
  for (int64_t b = 0; b + 1 < cu.size(0); ++b) {
    const int64_t begin = *cu.at(b), end = *cu.at(b + 1);
    if (end < begin || end > total || end - begin > max_len) {
      return kernel_error(msg, len, XHAL_ERR_INVALID_ARGUMENT,
                          "argument '%s': expected non-decreasing offsets within %lld tokens and "
                          "sequence lengths <= max_seqlen %lld, got [%lld] = %lld, [%lld] = %lld",
                          name, (long long)total, (long long)max_len, (long long)b, (long long)begin,
                          (long long)(b + 1), (long long)end);
    }
  }
  return XHAL_OK;
}

// attention_varlen: the spans of cu_seqlens_q/k, checked (non-decreasing, within the tokens and
// max_seqlen) before anything is written; then a span without keys for the rows past the last
// sequence, if any.
inline xhal_status varlen_spans(const xhal_op_call* c, char* msg, size_t len, std::vector<SequenceSpan>* seqs) {
  const TensorRef<const int32_t> cu_q(c->tensors[XHAL_ATTENTION_VARLEN_CU_SEQLENS_Q]),
      cu_k(c->tensors[XHAL_ATTENTION_VARLEN_CU_SEQLENS_K]);
  const int64_t Tq = c->tensors[XHAL_ATTENTION_Q]->shape[0], Tk = c->tensors[XHAL_ATTENTION_K]->shape[0];
  const int64_t batch = cu_q.size(0) - 1;
  const xhal_attention_op_params& p = kernels::op_params<xhal_attention_op_params>(c);
  for (const auto& [name, cu, total, max_len] :
       {std::tuple{"cu_seqlens_q", &cu_q, Tq, p.max_seqlen_q}, std::tuple{"cu_seqlens_k", &cu_k, Tk, p.max_seqlen_k}}) {
    if (const xhal_status s = check_offsets(msg, len, name, *cu, total, max_len); s != XHAL_OK) return s;
  }
  seqs->clear();
  for (int64_t b = 0; b < batch; ++b) {
    seqs->push_back({*cu_q.at(b), *cu_q.at(b + 1) - *cu_q.at(b), *cu_k.at(b), *cu_k.at(b + 1) - *cu_k.at(b)});
  }
  // Query rows past the last sequence belong to none: one more span of them with no keys, so they
  // are written as rows that see no key (0, lse -inf) and every output is written in full.
  if (const int64_t covered = *cu_q.at(batch); covered < Tq) seqs->push_back({covered, Tq - covered, 0, 0});
  return XHAL_OK;
}

// paged_prefill: the spans of cu_seqlens_q with the keys of seq_lens, after the offsets, lengths
// and the block indices they use are checked; then a span without keys for the rows past the last
// sequence, as varlen_spans.
inline xhal_status paged_spans(const xhal_op_call* c, char* msg, size_t len, std::vector<SequenceSpan>* seqs) {
  const TensorRef<const int32_t> cu_q(c->tensors[XHAL_PAGED_PREFILL_CU_SEQLENS_Q]),
      lens(c->tensors[XHAL_PAGED_PREFILL_SEQ_LENS]);
  const int64_t Tq = c->tensors[XHAL_PAGED_PREFILL_Q]->shape[0], batch = cu_q.size(0) - 1;
  xhal_status s = check_paged_tables(c, msg, len, XHAL_PAGED_PREFILL_BLOCK_TABLE, XHAL_PAGED_PREFILL_SEQ_LENS);
  if (s == XHAL_OK) {
    s = check_offsets(msg, len, "cu_seqlens_q", cu_q, Tq, kernels::op_params<xhal_attention_op_params>(c).max_seqlen_q);
  }
  if (s != XHAL_OK) return s;
  seqs->clear();
  for (int64_t b = 0; b < batch; ++b) seqs->push_back({*cu_q.at(b), *cu_q.at(b + 1) - *cu_q.at(b), 0, *lens.at(b)});
  if (const int64_t covered = *cu_q.at(batch); covered < Tq) seqs->push_back({covered, Tq - covered, 0, 0});
  return XHAL_OK;
}

// The checked spans of a forward call: attention's, attention_varlen's or paged_prefill's.
inline xhal_status forward_spans(const xhal_op_call* c, char* msg, size_t len, std::vector<SequenceSpan>* seqs) {
  switch (c->op) {
    case XHAL_OP_ATTENTION: *seqs = batched_spans(c); return XHAL_OK;
    case XHAL_OP_PAGED_PREFILL: return paged_spans(c, msg, len, seqs);
    default: return varlen_spans(c, msg, len, seqs);
  }
}

inline const char* forward_op_name(const xhal_op_call* c) {
  switch (c->op) {
    case XHAL_OP_ATTENTION: return "attention";
    case XHAL_OP_PAGED_PREFILL: return "paged_prefill";
    default: return "attention_varlen";
  }
}

// The op's rows by (sequence, token of it, head): batched tensors have a leading batch dim, packed
// (varlen) ones do not; paged_prefill's keys and values are rows of the paged cache, key j of
// sequence b at row j % block_size of block block_table[b][j / block_size].
template <class S>
struct AttentionRows {
  TensorRef<const S> q, k, v;
  TensorRef<S> out;
  TensorRef<float> lse;
  TensorRef<const int32_t> block_table;
  const std::vector<SequenceSpan>& seqs;
  bool batched;
  int64_t block_size;  // 0: not paged

  AttentionRows(const xhal_op_call* c, const std::vector<SequenceSpan>& spans, bool is_batched)
      : q(c->tensors[XHAL_ATTENTION_Q]),
        k(c->tensors[XHAL_ATTENTION_K]),
        v(c->tensors[XHAL_ATTENTION_V]),
        out(c->tensors[XHAL_ATTENTION_OUT]),
        lse(c->tensors[XHAL_ATTENTION_LSE]),
        block_table(c->op == XHAL_OP_PAGED_PREFILL ? c->tensors[XHAL_PAGED_PREFILL_BLOCK_TABLE] : nullptr),
        seqs(spans),
        batched(is_batched),
        block_size(c->op == XHAL_OP_PAGED_PREFILL ? k.size(1) : 0) {}
  int64_t kv_heads() const { return k.size(-2); }
  int64_t group() const { return q.size(-2) / k.size(-2); }
  // Rows are query rows i or key rows j within sequence `seq`.
  const S* query(int64_t seq, int64_t i, int64_t head) const {
    return row(q, seq, seqs[size_t(seq)].q_begin + i, head);
  }
  const S* key(int64_t seq, int64_t j, int64_t head) const {
    return block_size > 0 ? paged_row(k, seq, j, head) : row(k, seq, seqs[size_t(seq)].k_begin + j, head);
  }
  const S* value(int64_t seq, int64_t j, int64_t head) const {
    return block_size > 0 ? paged_row(v, seq, j, head) : row(v, seq, seqs[size_t(seq)].k_begin + j, head);
  }
  S* output(int64_t seq, int64_t i, int64_t head) const { return row(out, seq, seqs[size_t(seq)].q_begin + i, head); }
  float* lse_of(int64_t seq, int64_t i, int64_t head) const {
    if (!lse) return nullptr;
    return batched ? lse.at(seq, head, i) : lse.at(head, seqs[size_t(seq)].q_begin + i);
  }
  // Rows of other tensors laid out as q (query_row_of) or as k (key_row_of): the gradients.
  template <class T>
  T* query_row_of(const TensorRef<T>& t, int64_t seq, int64_t i, int64_t head) const {
    return row(t, seq, seqs[size_t(seq)].q_begin + i, head);
  }
  template <class T>
  T* key_row_of(const TensorRef<T>& t, int64_t seq, int64_t j, int64_t head) const {
    return row(t, seq, seqs[size_t(seq)].k_begin + j, head);
  }

 private:
  template <class T>
  T* row(const TensorRef<T>& ref, int64_t seq, int64_t token, int64_t head) const {
    return batched ? ref.at(seq, token, head, 0) : ref.at(token, head, 0);
  }
  const S* paged_row(const TensorRef<const S>& cache, int64_t seq, int64_t j, int64_t head) const {
    return cache.at(*block_table.at(seq, j / block_size), j % block_size, head, 0);
  }
};

// The tasks of the (sequence, kv head) pairs [pair0, pair1) (pair = sequence * Hkv + kv head): one
// per tile of `query_rows` query rows, largest first, so that the threads' last tasks end close
// together (a task's rows times the keys its last row may see under a causal mask).
template <class S>
class AttentionTasks {
 public:
  AttentionTasks(const AttentionRows<S>& at, int64_t query_rows, int64_t pair0, int64_t pair1)
      : at_(at), query_rows_(query_rows) {
    if (at.q.size(-2) == 0) return;
    const int64_t Hkv = at.kv_heads();
    for (int64_t pair = pair0; pair < pair1; ++pair) {
      const SequenceSpan& seq = at.seqs[size_t(pair / Hkv)];
      for (int64_t i0 = 0; i0 < seq.Sq; i0 += query_rows) tasks_.push_back({pair / Hkv, pair % Hkv, i0});
      max_rows_ = std::max(max_rows_, std::min(query_rows, seq.Sq));
      max_keys_ = std::max(max_keys_, seq.Sk);
    }
    const auto cost = [&](const Task& t) {
      const SequenceSpan& seq = at.seqs[size_t(t.seq)];
      const int64_t i1 = std::min(t.i0 + query_rows, seq.Sq);
      return (i1 - t.i0) * std::min(seq.Sk, i1 + seq.Sk - seq.Sq);
    };
    std::stable_sort(tasks_.begin(), tasks_.end(), [&](const Task& a, const Task& b) { return cost(a) > cost(b); });
  }
  int64_t count() const { return int64_t(tasks_.size()); }
  // The most query rows of one head in a task, and the most keys a task's sequence has: what a
  // thread's workspace is sized by.
  int64_t max_rows() const { return max_rows_; }
  int64_t max_keys() const { return max_keys_; }

  // Calls core(pair, group, i0, i1, Sq, Sk, D, Dv, q, k, v, out, lse) for every task on `threads`
  // OpenMP threads, with accessors q(g, i), k(j), v(j), out(g, i) (row pointers of query head g of
  // the task's group, key j) and lse(g, i) (float* or nullptr). An exception a task throws is
  // rethrown after the region (region_errors.hpp).
  template <class Core>
  void run(int threads, Core core) const {
    const int64_t Hkv = at_.kv_heads(), D = at_.q.size(-1), Dv = at_.v.size(-1), group = at_.group();
    RegionErrors errors;
#pragma omp parallel for schedule(dynamic) num_threads(threads)
    for (int64_t t = 0; t < count(); ++t) {
      errors.capture([&] {
        const Task task = tasks_[size_t(t)];
        const SequenceSpan& seq = at_.seqs[size_t(task.seq)];
        const int64_t b = task.seq, hq0 = task.hkv * group;
        core(
            b * Hkv + task.hkv, group, task.i0, std::min(task.i0 + query_rows_, seq.Sq), seq.Sq, seq.Sk, D, Dv,
            [&](int64_t g, int64_t i) { return at_.query(b, i, hq0 + g); },
            [&](int64_t j) { return at_.key(b, j, task.hkv); }, [&](int64_t j) { return at_.value(b, j, task.hkv); },
            [&](int64_t g, int64_t i) { return at_.output(b, i, hq0 + g); },
            [&](int64_t g, int64_t i) { return at_.lse_of(b, i, hq0 + g); });
      });
    }
    errors.rethrow();
  }

 private:
  struct Task {
    int64_t seq, hkv, i0;
  };
  const AttentionRows<S>& at_;
  int64_t query_rows_;
  std::vector<Task> tasks_;
  int64_t max_rows_ = 0, max_keys_ = 0;
};

// The tasks of every pair of the call.
template <class S>
AttentionTasks<S> all_attention_tasks(const AttentionRows<S>& at, int64_t query_rows) {
  return AttentionTasks<S>(at, query_rows, 0, int64_t(at.seqs.size()) * at.kv_heads());
}

}  // namespace xhal::cpu

// embedding and embedding_backward on the CPU. The forward copies rows (a memcpy each: the same
// speed as any SIMD loop) after checking every id, so a bad id leaves out unwritten. The backward
// sorts the tokens by id with a stable counting sort (O(T + V)), then sums each picked row's
// tokens in token order into an f32 row of the thread's workspace: the same bits whatever the
// thread count, no atomics. Rows no token picked, and padding_idx's, are zeroed (most of a large
// vocabulary's rows: a conversion from f32 per element ran at 0.13 of copy) with streaming stores
// on x86 (memset's stores read each line first: twice the traffic of a table far larger than the
// caches), memset elsewhere.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "element.hpp"
#include "kernel_registration.hpp"
#include "scratch.hpp"
#include "streaming_rows.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {
namespace {

// XHAL_OK when every id picks a row of the table, else invalid_argument naming the first that does not.
xhal_status check_ids(const DLTensor* ids, int64_t rows, const char* table, char* msg, size_t len) {
  for (int64_t t = 0; t < ids->shape[0]; ++t) {
    const int64_t id = index_at(ids, t);
    if (id < 0 || id >= rows) {
      return kernel_error(msg, len, XHAL_ERR_INVALID_ARGUMENT,
                          "argument 'ids': expected 0..%lld (rows of %s), got ids[%lld] = %lld", (long long)(rows - 1),
                          table, (long long)t, (long long)id);
    }
  }
  return XHAL_OK;
}

template <class E>
struct EmbeddingKernel {
  using S = typename E::Storage;
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    const DLTensor* ids = c->tensors[XHAL_EMBEDDING_IDS];
    const TensorRef<const S> table(c->tensors[XHAL_EMBEDDING_TABLE]);
    const TensorRef<S> out(c->tensors[XHAL_EMBEDDING_OUT]);
    if (const xhal_status s = check_ids(ids, table.size(0), "table", msg, len); s != XHAL_OK) return s;
    const int64_t T = out.size(0), D = out.size(1);
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < T; ++t) std::memcpy(out.at(t, 0), table.at(index_at(ids, t), 0), size_t(D) * sizeof(S));
    return XHAL_OK;
  }
};

template <class E>
struct EmbeddingBackwardKernel {
  using S = typename E::Storage;
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    const DLTensor* ids = c->tensors[XHAL_EMBEDDING_BACKWARD_IDS];
    const TensorRef<const S> dout(c->tensors[XHAL_EMBEDDING_BACKWARD_DOUT]);
    const TensorRef<S> dtable(c->tensors[XHAL_EMBEDDING_BACKWARD_DTABLE]);
    const int64_t T = dout.size(0), D = dout.size(1), V = dtable.size(0);
    const int64_t padding = kernels::op_params<xhal_embedding_op_params>(c).padding_idx;
    if (const xhal_status s = check_ids(ids, V, "dtable", msg, len); s != XHAL_OK) return s;
    // Counting sort: order[first[v]..first[v + 1]) are the tokens of row v in token order; next[v]
    // is where row v's next token goes while they are placed.
    int64_t count = 0;
    const bool overflow = __builtin_add_overflow(2 * V + 1, T, &count);  // V < 2^62: tensor sizes are checked
    Scratch index(c, overflow ? -1 : checked_bytes(count, sizeof(int64_t)));
    const ThreadWorkspaces workspaces(c, checked_bytes(D, sizeof(float)), V);
    if (index.data() == nullptr || !workspaces.ok()) return workspaces_refused(msg, len, "embedding_backward");
    int64_t* first = static_cast<int64_t*>(index.data());
    int64_t* next = first + V + 1;
    int64_t* order = next + V;
    std::fill(first, first + V + 1, 0);
    for (int64_t t = 0; t < T; ++t) ++first[index_at(ids, t) + 1];
    for (int64_t v = 0; v < V; ++v) first[v + 1] += first[v];
    std::copy(first, first + V, next);
    for (int64_t t = 0; t < T; ++t) order[next[index_at(ids, t)]++] = t;
#pragma omp parallel num_threads(workspaces.threads())
    {
#pragma omp for schedule(dynamic, 64)
      for (int64_t v = 0; v < V; ++v) {
        S* out = dtable.at(v, 0);
        if (v == padding || first[v] == first[v + 1]) {
          stream_zero(out, size_t(D) * sizeof(S));
          continue;
        }
        float* acc = static_cast<float*>(workspaces.of_this_thread());
        std::fill(acc, acc + D, 0.0f);
        for (int64_t i = first[v]; i < first[v + 1]; ++i) {
          const S* row = dout.at(order[i], 0);
#pragma omp simd
          for (int64_t d = 0; d < D; ++d) acc[d] += E::load(row[d]);
        }
        store_row<E>(acc, out, D);
      }
      streaming_fence();
    }
    return XHAL_OK;
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<EmbeddingKernel>(host, "cpu.embedding", XHAL_OP_EMBEDDING);
  register_float_kernels<EmbeddingBackwardKernel>(host, "cpu.embedding_backward", XHAL_OP_EMBEDDING_BACKWARD);
}

}  // namespace xhal::cpu

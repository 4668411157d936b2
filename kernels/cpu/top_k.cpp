// top_k on the CPU: rows in parallel, each in one pass keeping its k largest so far in a min-heap of
// argmax ranks (a key and a position in one integer, kernels/argmax.hpp). Blocks of 32 elements
// whose largest key (a vectorised pass) does not beat the heap's least are skipped, which most
// are; the heap sorted at the end gives the k in order.
#include <algorithm>
#include <cstdint>
#include <functional>

#include "element.hpp"
#include "kernel_registration.hpp"
#include "kernels/argmax.hpp"
#include "scratch.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {
namespace {

constexpr int64_t kSkipBlock = 32;

template <class E>
uint32_t key_at(const typename E::Storage* row, int64_t i) {
  return kernels::argmax_key(E::load(row[i]));
}

template <class E>
void top_k_row(const typename E::Storage* row, int64_t n, int64_t k, uint64_t* heap) {
  auto rank = [&](int64_t i) { return kernels::argmax_rank(key_at<E>(row, i), uint32_t(i)); };
  for (int64_t i = 0; i < k; ++i) heap[i] = rank(i);
  std::make_heap(heap, heap + k, std::greater<>());
  for (int64_t i0 = k; i0 < n; i0 += kSkipBlock) {
    const int64_t i1 = std::min(i0 + kSkipBlock, n);
    // A block whose keys are all at most the heap's least key holds no rank above it (an equal key
    // at a later position ranks lower): skipped after one vectorised pass, as most blocks are.
    uint32_t block_max = 0;
#pragma omp simd reduction(max : block_max)
    for (int64_t i = i0; i < i1; ++i) block_max = std::max(block_max, key_at<E>(row, i));
    if (block_max <= uint32_t(heap[0] >> 32)) continue;
    for (int64_t i = i0; i < i1; ++i) {
      const uint64_t r = rank(i);
      if (r <= heap[0]) continue;
      std::pop_heap(heap, heap + k, std::greater<>());
      heap[k - 1] = r;
      std::push_heap(heap, heap + k, std::greater<>());
    }
  }
  std::sort_heap(heap, heap + k, std::greater<>());  // largest first
}

template <class E>
struct TopK {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    using S = typename E::Storage;
    const TensorRef<const S> x(c->tensors[XHAL_TOP_K_X]);
    S* values = static_cast<S*>(c->tensors[XHAL_TOP_K_VALUES]->data);
    const DLTensor* indices = c->tensors[XHAL_TOP_K_INDICES];
    const bool wide = indices->dtype.bits == 64;
    const int64_t n = x.size(-1), rows = x.rows(), k = c->tensors[XHAL_TOP_K_VALUES]->shape[x.ndim - 1];
    const int64_t bytes = checked_bytes(k, sizeof(uint64_t));
    ThreadWorkspaces spaces(c, bytes, rows);
    if (!spaces.ok()) return workspaces_refused(msg, len, "cpu.top_k", bytes);
#pragma omp parallel for schedule(static) num_threads(spaces.threads())
    for (int64_t r = 0; r < rows; ++r) {  // nothing here throws: no exception guard needed
      uint64_t* heap = static_cast<uint64_t*>(spaces.of_this_thread());
      const S* row = x.row(r);
      top_k_row<E>(row, n, k, heap);
      for (int64_t j = 0; j < k; ++j) {
        const uint32_t i = kernels::rank_position(heap[j]);
        values[r * k + j] = row[i];
        if (wide) {
          static_cast<int64_t*>(indices->data)[r * k + j] = i;
        } else {
          static_cast<int32_t*>(indices->data)[r * k + j] = int32_t(i);
        }
      }
    }
    return XHAL_OK;
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) { register_float_kernels<TopK>(host, "cpu.top_k", XHAL_OP_TOP_K); }

}  // namespace xhal::cpu

// paged_attention on the CPU: one task per (sequence, kv head), all query heads of the group in
// one pass so each cached K/V row is converted once. Every block index and length is checked
// before any output is written.
#include "attention_core.hpp"
#include "kernel_registration.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {
namespace {

template <class E>
struct PagedAttentionKernel {
  using S = typename E::Storage;

  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    const TensorRef<const S> q(c->t[XHAL_SLOT_Q]), kc(c->t[XHAL_SLOT_K]), vc(c->t[XHAL_SLOT_V]);
    const TensorRef<S> out(c->t[XHAL_SLOT_OUT]);
    const TensorRef<const int32_t> table(c->t[XHAL_SLOT_BLOCK_TABLE]), lens(c->t[XHAL_SLOT_SEQ_LENS]);
    const int64_t B = q.size(0), Hq = q.size(1), D = q.size(2), Dv = vc.size(3);
    const int64_t num_blocks = kc.size(0), block_size = kc.size(1), Hkv = kc.size(2);
    const int64_t max_blocks = table.size(1);
    for (int64_t b = 0; b < B; ++b) {
      const int64_t L = *lens.at(b);
      if (L < 0 || L > max_blocks * block_size) {
        return kernel_error(msg, len, XHAL_ERR_INVALID_ARGUMENT,
                            "argument 'seq_lens': expected 0..%lld (max_blocks * block_size), got "
                            "seq_lens[%lld] = %lld",
                            (long long)(max_blocks * block_size), (long long)b, (long long)L);
      }
      for (int64_t blk = 0; blk * block_size < L; ++blk) {
        const int64_t index = *table.at(b, blk);
        if (index < 0 || index >= num_blocks) {
          return kernel_error(msg, len, XHAL_ERR_INVALID_ARGUMENT,
                              "argument 'block_table': expected block indices in 0..%lld, got "
                              "block_table[%lld][%lld] = %lld",
                              (long long)(num_blocks - 1), (long long)b, (long long)blk, (long long)index);
        }
      }
    }
    if (Hq == 0) return XHAL_OK;
    const int64_t group = Hq / Hkv;
    const MaskParams mask = MaskParams::from(c->params);
#pragma omp parallel for collapse(2) schedule(dynamic)
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t h = 0; h < Hkv; ++h) {
        const int64_t L = *lens.at(b);
        auto cached = [&](const TensorRef<const S>& cache, int64_t j) {
          return cache.at(*table.at(b, j / block_size), j % block_size, h, 0);
        };
        attend_group<E>(
            group, 0, 1, 1, L, D, Dv, mask,
            [&](int64_t g, int64_t) { return q.at(b, h * group + g, 0); },
            [&](int64_t j) { return cached(kc, j); }, [&](int64_t j) { return cached(vc, j); },
            [&](int64_t g, int64_t) { return out.at(b, h * group + g, 0); },
            [](int64_t, int64_t) -> float* { return nullptr; });
      }
    }
    return XHAL_OK;
  }
};

}  // namespace

void register_paged_attention_kernels(const xhal_host_api* host) {
  register_float_kernels<PagedAttentionKernel>(host, "cpu.paged_attention", XHAL_OP_PAGED_ATTENTION);
}

}  // namespace xhal::cpu

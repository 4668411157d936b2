// paged_attention on the CPU: one task per (sequence, kv head), all query heads of the group in
// one pass so each cached K/V row is converted once. Every block index and length is checked
// before any output is written.
#include "attention_core.hpp"
#include "kernel_registration.hpp"
#include "paged_attention_checks.hpp"
#include "region_errors.hpp"
#include "scratch.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {
namespace {

template <class E>
struct PagedAttentionKernel {
  using S = typename E::Storage;

  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    const TensorRef<const S> q(c->tensors[XHAL_PAGED_ATTENTION_Q]), kc(c->tensors[XHAL_PAGED_ATTENTION_K_CACHE]),
        vc(c->tensors[XHAL_PAGED_ATTENTION_V_CACHE]);
    const TensorRef<S> out(c->tensors[XHAL_PAGED_ATTENTION_OUT]);
    const TensorRef<const int32_t> table(c->tensors[XHAL_PAGED_ATTENTION_BLOCK_TABLE]),
        lens(c->tensors[XHAL_PAGED_ATTENTION_SEQ_LENS]);
    const int64_t B = q.size(0), Hq = q.size(1), D = q.size(2), Dv = vc.size(3);
    const int64_t block_size = kc.size(1), Hkv = kc.size(2);
    if (const xhal_status s = check_paged_tables(c, msg, len); s != XHAL_OK) return s;
    if (Hq == 0) return XHAL_OK;
    const int64_t group = Hq / Hkv, max_keys = table.size(1) * block_size;
    const MaskParams mask = MaskParams::from(c->params);
    const ThreadWorkspaces workspaces(c, CoreBuffers::bytes(group, max_keys, D, Dv), B * Hkv);
    if (!workspaces.ok()) {
      return workspaces_refused(msg, len, "paged_attention", workspaces.bytes_each());
    }
    RegionErrors errors;
#pragma omp parallel for collapse(2) schedule(dynamic) num_threads(workspaces.threads())
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t h = 0; h < Hkv; ++h) {
        errors.capture([&] {
          const int64_t L = *lens.at(b);
          auto cached = [&](const TensorRef<const S>& cache, int64_t j) {
            return cache.at(*table.at(b, j / block_size), j % block_size, h, 0);
          };
          Carver carver(workspaces.of_this_thread());
          attend_group<E>(
              group, 0, 1, 1, L, D, Dv, mask, [&](int64_t g, int64_t) { return q.at(b, h * group + g, 0); },
              [&](int64_t j) { return cached(kc, j); }, [&](int64_t j) { return cached(vc, j); },
              [&](int64_t g, int64_t) { return out.at(b, h * group + g, 0); },
              [](int64_t, int64_t) -> float* { return nullptr; },
              CoreBuffers::carve(carver, group, CoreBuffers::keys_for(max_keys), D, Dv));
        });
      }
    }
    errors.rethrow();
    return XHAL_OK;
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<PagedAttentionKernel>(host, "cpu.paged_attention", XHAL_OP_PAGED_ATTENTION);
}

}  // namespace xhal::cpu

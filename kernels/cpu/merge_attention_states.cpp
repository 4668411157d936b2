// merge_attention_states on the CPU, the reference: (token, head) rows in parallel, each row's
// weights from kernels/attention_merge.hpp, then one pass over its D values.
#include "element.hpp"
#include "kernel_registration.hpp"
#include "kernels/attention_merge.hpp"
#include "merge_attention_tensors.hpp"

namespace xhal::cpu {
namespace {

template <class E>
struct MergeAttentionStatesKernel {
  using S = typename E::Storage;
  static xhal_status run(const xhal_op_call* c, char*, size_t) {
    const MergeTensors<S> m(c);
    const int64_t H = m.out.size(1), D = m.out.size(2), rows = m.out.size(0) * H;
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t t = r / H, h = r % H;
      const kernels::MergeWeights w = kernels::merge_weights(*m.lse_a.at(h, t), *m.lse_b.at(h, t));
      const S* a = m.out_a.at(t, h);
      const S* b = m.out_b.at(t, h);
      S* o = m.out.at(t, h);
      for (int64_t d = 0; d < D; ++d) {
        const float from_a = w.a != 0.0f ? w.a * E::load(a[d]) : 0.0f;
        const float from_b = w.b != 0.0f ? w.b * E::load(b[d]) : 0.0f;
        o[d] = E::store(from_a + from_b);
      }
      if (m.lse) *m.lse.at(h, t) = w.lse;
    }
    return XHAL_OK;
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<MergeAttentionStatesKernel>(host, "cpu.merge_attention_states",
                                                     XHAL_OP_MERGE_ATTENTION_STATES);
}

}  // namespace xhal::cpu

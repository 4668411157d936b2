// adamw_step and global_grad_norm on the CPU, the reference kernels. adamw_step: one pass over the
// flat buffers, elements in parallel. global_grad_norm: optimizer_shared.hpp's chunks, each summed
// in f32 in order.
#include "element.hpp"
#include "kernel_registration.hpp"
#include "optimizer_shared.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {
namespace {

template <class E>
struct AdamWKernel {
  using S = typename E::Storage;
  static xhal_status run(const xhal_op_call* c, char*, size_t) {
    S* param = static_cast<S*>(c->tensors[XHAL_ADAMW_STEP_PARAM]->data);
    const S* grad = static_cast<const S*>(c->tensors[XHAL_ADAMW_STEP_GRAD]->data);
    float* m = static_cast<float*>(c->tensors[XHAL_ADAMW_STEP_EXP_AVG]->data);
    float* v = static_cast<float*>(c->tensors[XHAL_ADAMW_STEP_EXP_AVG_SQ]->data);
    const DLTensor* master_t = c->tensors[XHAL_ADAMW_STEP_MASTER];
    float* master = master_t ? static_cast<float*>(master_t->data) : nullptr;
    const int64_t n = c->tensors[XHAL_ADAMW_STEP_PARAM]->shape[0];
    const AdamWConstants k = AdamWConstants::of(c);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      const float w = k.update(E::load(grad[i]), master ? master[i] : E::load(param[i]), m[i], v[i]);
      if (master) master[i] = w;
      param[i] = E::store(w);
    }
    return XHAL_OK;
  }
};

template <class E>
struct GradNormKernel {
  static xhal_status run(const xhal_op_call* c, char*, size_t) {
    const auto* g = static_cast<const typename E::Storage*>(c->tensors[XHAL_GLOBAL_GRAD_NORM_GRAD]->data);
    grad_norm_by_chunks(c, [&](int64_t i0, int64_t i1) {
      float sum = 0.0f;
      for (int64_t i = i0; i < i1; ++i) sum += E::load(g[i]) * E::load(g[i]);
      return sum;
    });
    return XHAL_OK;
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<AdamWKernel>(host, "cpu.adamw_step", XHAL_OP_ADAMW_STEP);
  register_float_kernels<GradNormKernel>(host, "cpu.global_grad_norm", XHAL_OP_GLOBAL_GRAD_NORM);
}

}  // namespace xhal::cpu

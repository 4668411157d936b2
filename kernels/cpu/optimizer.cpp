// adamw_step and global_grad_norm on the CPU, the reference kernels. adamw_step: one pass over the
// list's buffers, ranges of elements in parallel. global_grad_norm: optimizer_shared.hpp's chunks, each summed
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
    const kernels::AdamWUpdate k = adamw_update_of(c);
    adamw_by_ranges(c, [&](const kernels::AdamWBuffers& b, int64_t i0, int64_t i1) {
      S* param = static_cast<S*>(b.param);
      const S* grad = static_cast<const S*>(b.grad);
      for (int64_t i = i0; i < i1; ++i) {
        const float w = k(E::load(grad[i]), b.master ? b.master[i] : E::load(param[i]), b.m[i], b.v[i]);
        if (b.master) b.master[i] = w;
        param[i] = E::store(w);
      }
    });
    return XHAL_OK;
  }
};

template <class E>
struct GradNormKernel {
  static xhal_status run(const xhal_op_call* c, char*, size_t) {
    grad_norm_by_chunks(c, [&](const void* data, int64_t i0, int64_t i1) {
      const auto* g = static_cast<const typename E::Storage*>(data);
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

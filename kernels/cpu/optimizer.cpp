// adamw_step and global_grad_norm on the CPU. adamw_step: one pass over the flat buffers, elements
// in parallel. global_grad_norm: fixed chunks of the buffer (a function of its length alone), each
// summed in f32 in order, the chunks' sums added in chunk order in f64: the same bits whatever the
// thread count.
#include <algorithm>
#include <cmath>
#include <vector>

#include "adamw_update.hpp"
#include "element.hpp"
#include "kernel_registration.hpp"
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

constexpr int64_t kNormChunk = 1 << 16;

template <class E>
struct GradNormKernel {
  using S = typename E::Storage;
  static xhal_status run(const xhal_op_call* c, char*, size_t) {
    const S* g = static_cast<const S*>(c->tensors[XHAL_GLOBAL_GRAD_NORM_GRAD]->data);
    const int64_t n = c->tensors[XHAL_GLOBAL_GRAD_NORM_GRAD]->shape[0];
    const int64_t chunks = (n + kNormChunk - 1) / kNormChunk;
    std::vector<float> sums(static_cast<size_t>(chunks));
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < chunks; ++k) {
      float sum = 0.0f;
      for (int64_t i = k * kNormChunk; i < std::min(n, (k + 1) * kNormChunk); ++i) sum += E::load(g[i]) * E::load(g[i]);
      sums[size_t(k)] = sum;
    }
    double total = 0.0;
    for (const float s : sums) total += s;
    const float norm = float(std::sqrt(total));
    *static_cast<float*>(c->tensors[XHAL_GLOBAL_GRAD_NORM_NORM]->data) = norm;
    if (const DLTensor* clip = c->tensors[XHAL_GLOBAL_GRAD_NORM_CLIP_SCALE]) {
      const float max_norm = kernels::op_params<xhal_grad_norm_op_params>(c).max_norm;
      *static_cast<float*>(clip->data) = kernels::clip_scale(norm, max_norm);
    }
    return XHAL_OK;
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<AdamWKernel>(host, "cpu.adamw_step", XHAL_OP_ADAMW_STEP);
  register_float_kernels<GradNormKernel>(host, "cpu.global_grad_norm", XHAL_OP_GLOBAL_GRAD_NORM);
}

}  // namespace xhal::cpu

// What the CPU's reference and SIMD optimizer kernels share: AdamW's update of one element with
// its per-call constants, m = β1 m + (1 − β1) g, v = β2 v + (1 − β2) g², w = w (1 − lr·wd) −
// step_size · m / (√v / √(1 − β2^t) + eps) with step_size = lr / (1 − β1^t) and g the gradient times
// its scale; and global_grad_norm's chunks.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernel_registration.hpp"

namespace xhal::cpu {

struct AdamWConstants {
  float beta1, beta2, eps, scale, step_size, inv_sqrt_bc2, decay;

  // From the call: the learning rate and gradient scale from their device scalars when given (host
  // memory on the CPU); the bias corrections in f64 (β^t underflows gracefully to 0 late).
  static AdamWConstants of(const xhal_op_call* c) {
    const auto& p = kernels::op_params<xhal_adamw_op_params>(c);
    const DLTensor* lr_t = c->tensors[XHAL_ADAMW_STEP_LR];
    const DLTensor* scale_t = c->tensors[XHAL_ADAMW_STEP_GRAD_SCALE];
    const float lr = lr_t ? *static_cast<const float*>(lr_t->data) : p.lr;
    return {p.beta1,
            p.beta2,
            p.eps,
            scale_t ? *static_cast<const float*>(scale_t->data) : 1.0f,
            float(double(lr) / (1.0 - std::pow(double(p.beta1), double(p.step)))),
            float(1.0 / std::sqrt(1.0 - std::pow(double(p.beta2), double(p.step)))),
            1.0f - lr * p.weight_decay};
  }

  // One element: the gradient g (unscaled) and the weight w (master or parameter) in, m and v
  // updated in place; returns the new weight.
  float update(float g, float w, float& m, float& v) const {
    g *= scale;
    m = beta1 * m + (1.0f - beta1) * g;
    v = beta2 * v + (1.0f - beta2) * g * g;
    return w * decay - step_size * m / (std::sqrt(v) * inv_sqrt_bc2 + eps);
  }
};

// global_grad_norm: the gradient in chunks of kNormChunk elements (a partition that depends on its
// length alone), each chunk's sum of squares from chunk_sum(i0, i1) (f32; must not throw), in
// parallel; the sums added in chunk order in f64, so the bits do not depend on the thread count.
// Writes the norm and, when asked for, the clip scale.
inline constexpr int64_t kNormChunk = 1 << 16;

template <class ChunkSum>
void grad_norm_by_chunks(const xhal_op_call* c, ChunkSum&& chunk_sum) {
  const int64_t n = c->tensors[XHAL_GLOBAL_GRAD_NORM_GRAD]->shape[0];
  const int64_t chunks = (n + kNormChunk - 1) / kNormChunk;
  std::vector<float> sums(static_cast<size_t>(chunks));
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < chunks; ++k) sums[size_t(k)] = chunk_sum(k * kNormChunk, std::min(n, (k + 1) * kNormChunk));
  double total = 0.0;
  for (const float s : sums) total += s;
  const float norm = float(std::sqrt(total));
  *static_cast<float*>(c->tensors[XHAL_GLOBAL_GRAD_NORM_NORM]->data) = norm;
  if (const DLTensor* clip = c->tensors[XHAL_GLOBAL_GRAD_NORM_CLIP_SCALE]) {
    *static_cast<float*>(clip->data) =
        kernels::clip_scale(norm, kernels::op_params<xhal_grad_norm_op_params>(c).max_norm);
  }
}

}  // namespace xhal::cpu

// What every backend's optimizer kernels share: AdamW's update of one element and its bias
// corrections, the buffers of one adamw_step list entry, the two ops' list layouts, and
// global_grad_norm's clip scale. Host and device code alike, so every backend updates alike.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/kernel_registration.hpp"

namespace xhal::kernels {

inline ListCall adamw_list(const xhal_op_call* c) {
  return {c, XHAL_ADAMW_STEP_LIST_FIRST, XHAL_ADAMW_STEP_LIST_STRIDE};
}
inline ListCall grad_norm_list(const xhal_op_call* c) {
  return {c, XHAL_GLOBAL_GRAD_NORM_LIST_FIRST, XHAL_GLOBAL_GRAD_NORM_LIST_STRIDE};
}

// 1 / (1 − β1^t) and 1 / √(1 − β2^t) of the call's step t, in f64 (β^t underflows gracefully to
// 0 late).
struct AdamWBiasCorrections {
  float inv_bc1, inv_sqrt_bc2;

  static AdamWBiasCorrections of(const xhal_adamw_op_params& p) {
    return {float(1.0 / (1.0 - std::pow(double(p.beta1), double(p.step)))),
            float(1.0 / std::sqrt(1.0 - std::pow(double(p.beta2), double(p.step))))};
  }
};

// AdamW's update of one element (torch.optim.AdamW) with the call's constants: m = β1 m + (1 − β1) g,
// v = β2 v + (1 − β2) g², w = w·decay − step_size · m / (√v · inv_sqrt_bc2 + eps), g the gradient
// times `scale`; decay = 1 − lr·weight_decay, step_size = lr · inv_bc1.
struct AdamWUpdate {
  float beta1, beta2, eps, scale, step_size, inv_sqrt_bc2, decay;

  // From the call's parameters and the learning rate and gradient scale in effect (read from
  // their device scalars where those live).
  XHAL_HOST_DEVICE static AdamWUpdate of(const xhal_adamw_op_params& p, AdamWBiasCorrections bc, float lr,
                                         float scale) {
    return {p.beta1, p.beta2, p.eps, scale, lr * bc.inv_bc1, bc.inv_sqrt_bc2, 1.0f - lr * p.weight_decay};
  }

  // The gradient g (unscaled) and the weight w (master or parameter) in, m and v updated in
  // place; returns the new weight.
  XHAL_HOST_DEVICE float operator()(float g, float w, float& m, float& v) const {
    g *= scale;
    m = beta1 * m + (1.0f - beta1) * g;
    v = beta2 * v + (1.0f - beta2) * g * g;
    return w * decay - step_size * m / (sqrtf(v) * inv_sqrt_bc2 + eps);
  }
};

// One entry of adamw_step's list; master is null when the call has none.
struct AdamWBuffers {
  void* param;
  const void* grad;
  float *m, *v, *master;

  static AdamWBuffers of(const ListCall& list, int64_t i) {
    const DLTensor* master = list.tensor(XHAL_ADAMW_STEP_MASTER, i);
    return {list.tensor(XHAL_ADAMW_STEP_PARAM, i)->data, list.tensor(XHAL_ADAMW_STEP_GRAD, i)->data,
            static_cast<float*>(list.tensor(XHAL_ADAMW_STEP_EXP_AVG, i)->data),
            static_cast<float*>(list.tensor(XHAL_ADAMW_STEP_EXP_AVG_SQ, i)->data),
            master ? static_cast<float*>(master->data) : nullptr};
  }
};

// global_grad_norm's clip scale: min(1, max_norm / (norm + 1e-6)), 1 when max_norm <= 0, NaN for a
// NaN norm (an update with it shows, instead of running unclipped).
XHAL_HOST_DEVICE inline float clip_scale(float norm, float max_norm) {
  if (!(max_norm > 0)) return 1.0f;
  const float ratio = max_norm / (norm + 1e-6f);
  return ratio < 1.0f || ratio != ratio ? ratio : 1.0f;
}

}  // namespace xhal::kernels

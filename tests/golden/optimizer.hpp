// Float64 references of the optimizer ops: AdamW as torch.optim.AdamW defines it, and the L2 norm
// of a gradient with its clip scale. Same layout contract as golden.hpp.
#pragma once

#include <cstdint>
#include <vector>

namespace xhal::golden {

struct AdamWState {
  std::vector<double> param, exp_avg, exp_avg_sq;  // [N] each, updated
};

// One step on param (the master weights when there are any): g = grad * grad_scale;
// param *= 1 - lr * weight_decay; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
// param -= lr / (1 - b1^step) * m / (sqrt(v) / sqrt(1 - b2^step) + eps).
AdamWState adamw_step(AdamWState state, const std::vector<double>& grad, double grad_scale, double lr, double beta1,
                      double beta2, double eps, double weight_decay, int64_t step);

// sqrt(sum of squares) of grad.
double l2_norm(const std::vector<double>& grad);

}  // namespace xhal::golden

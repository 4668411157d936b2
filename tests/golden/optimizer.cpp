#include "optimizer.hpp"

#include <cmath>
#include <stdexcept>

namespace xhal::golden {

AdamWState adamw_step(AdamWState s, const std::vector<double>& grad, double grad_scale, double lr, double beta1,
                      double beta2, double eps, double weight_decay, int64_t step) {
  const size_t n = s.param.size();
  if (grad.size() != n || s.exp_avg.size() != n || s.exp_avg_sq.size() != n) {
    throw std::invalid_argument("xhal::golden: adamw_step: param, grad, exp_avg and exp_avg_sq differ in size");
  }
  const double bc1 = 1 - std::pow(beta1, double(step)), bc2 = 1 - std::pow(beta2, double(step));
  for (size_t i = 0; i < n; ++i) {
    const double g = grad[i] * grad_scale;
    s.param[i] *= 1 - lr * weight_decay;
    s.exp_avg[i] = beta1 * s.exp_avg[i] + (1 - beta1) * g;
    s.exp_avg_sq[i] = beta2 * s.exp_avg_sq[i] + (1 - beta2) * g * g;
    s.param[i] -= lr / bc1 * s.exp_avg[i] / (std::sqrt(s.exp_avg_sq[i]) / std::sqrt(bc2) + eps);
  }
  return s;
}

double l2_norm(const std::vector<double>& grad) {
  double sum = 0;
  for (const double g : grad) sum += g * g;
  return std::sqrt(sum);
}

}  // namespace xhal::golden

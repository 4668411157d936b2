// float64 golden model of sample's distribution (docs/ops.md, sample).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "golden/golden.hpp"

namespace xhal::golden {

SampleDistribution sample_distribution(const std::vector<double>& logits, const SampleSettings& s) {
  const size_t V = logits.size();
  SampleDistribution d;
  d.p.assign(V, 0.0);
  d.borderline.assign(V, false);
  const double max = *std::max_element(logits.begin(), logits.end());
  std::vector<double> w(V);
  for (size_t i = 0; i < V; ++i) w[i] = std::exp((logits[i] - max) / s.temperature);
  std::vector<size_t> order(V);
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return logits[a] > logits[b]; });
  // A token is borderline when a relative change of `margin` in its logit or weight could move it
  // across a threshold: f32 arithmetic may decide it either way.
  constexpr double margin = 1e-5;
  auto near = [&](double a, double b) {
    return std::isfinite(a) && std::isfinite(b) &&
           std::abs(a - b) <= margin * std::max({1.0, std::abs(a), std::abs(b)});
  };
  double threshold = -INFINITY;
  if (s.top_k > 0 && size_t(s.top_k) < V) threshold = logits[order[size_t(s.top_k) - 1]];
  if (s.top_p < 1) {
    double total = 0;
    for (size_t i = 0; i < V; ++i) total += logits[i] >= threshold ? w[i] : 0.0;
    const double target = std::max(s.top_p, 0.0) * total;
    double sum = 0;
    for (size_t j = 0; j < V; ++j) {
      sum += w[order[j]];
      if (sum >= target || near(sum, target)) {
        threshold = logits[order[j]];
        // The token that crossed the target with little to spare, and its successor, are borderline.
        if (near(sum, target)) {
          d.borderline[order[j]] = true;
          if (j + 1 < V) d.borderline[order[j + 1]] = true;
        }
        break;
      }
    }
  }
  double kept = 0;
  for (size_t i = 0; i < V; ++i) {
    if (near(logits[i], threshold) || (s.min_p > 0 && near(w[i], s.min_p))) d.borderline[i] = true;
    if (logits[i] >= threshold && w[i] >= s.min_p) {
      d.p[i] = w[i];
      kept += w[i];
    }
  }
  for (double& p : d.p) p /= kept;
  return d;
}

}  // namespace xhal::golden

#include "gradients.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "golden.hpp"

namespace xhal::golden {
namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("xhal::golden: " + what);
}

size_t sz(int64_t n) { return static_cast<size_t>(n); }

}  // namespace

RmsNormGradients rms_norm_backward(const std::vector<double>& dout, const std::vector<double>& x,
                                   const std::vector<double>& weight, double eps) {
  const size_t N = weight.size();
  require(N > 0 && x.size() % N == 0 && dout.size() == x.size(),
          "rms_norm_backward: dout and x must be [M,N] with N = weight.size()");
  RmsNormGradients g{std::vector<double>(x.size()), std::vector<double>(N, 0.0)};
  for (size_t row = 0; row < x.size(); row += N) {
    double sum_sq = 0, dot = 0;
    for (size_t n = 0; n < N; ++n) {
      sum_sq += x[row + n] * x[row + n];
      dot += dout[row + n] * weight[n] * x[row + n];
    }
    const double r = 1.0 / std::sqrt(sum_sq / static_cast<double>(N) + eps);
    for (size_t n = 0; n < N; ++n) {
      g.dx[row + n] = r * (dout[row + n] * weight[n] - x[row + n] * r * r * dot / static_cast<double>(N));
      g.dweight[n] += dout[row + n] * x[row + n] * r;
    }
  }
  return g;
}

SwigluGradients swiglu_backward(const std::vector<double>& dout, const std::vector<double>& gate,
                                const std::vector<double>& up) {
  require(gate.size() == up.size() && dout.size() == gate.size(), "swiglu_backward: dout, gate and up differ in size");
  SwigluGradients g{std::vector<double>(gate.size()), std::vector<double>(gate.size())};
  for (size_t i = 0; i < gate.size(); ++i) {
    const double s = 1.0 / (1.0 + std::exp(-gate[i]));
    g.dgate[i] = dout[i] * up[i] * s * (1.0 + gate[i] * (1.0 - s));
    g.dup[i] = dout[i] * gate[i] * s;
  }
  return g;
}

void rope_backward(std::vector<double>& x, const std::vector<int64_t>& positions, int64_t H, int64_t D,
                   const std::vector<double>& cache, int64_t rotary_dim, bool neox) {
  // The transpose of a rotation by an angle is the rotation by its negative: rope with every
  // sine of the cache negated.
  require(rotary_dim > 0 && rotary_dim % 2 == 0 && cache.size() % sz(rotary_dim) == 0,
          "rope_backward: cache must be [max_pos,rotary_dim] with rotary_dim even");
  std::vector<double> inverse = cache;
  for (size_t row = 0; row < inverse.size(); row += sz(rotary_dim)) {
    for (int64_t i = rotary_dim / 2; i < rotary_dim; ++i) inverse[row + sz(i)] = -inverse[row + sz(i)];
  }
  rope(x, positions, H, D, inverse, rotary_dim, neox);
}

std::vector<double> cross_entropy_backward(const std::vector<double>& logits, const std::vector<int64_t>& labels,
                                           int64_t V, const std::vector<double>& dloss, int64_t ignore_index,
                                           double label_smoothing, double z_loss) {
  require(dloss.size() == labels.size(), "cross_entropy_backward: dloss must be [T]");
  const std::vector<double> lse = cross_entropy(logits, labels, V, ignore_index, 0, 0).lse;
  std::vector<double> d(logits.size(), 0.0);
  for (size_t t = 0; t < labels.size(); ++t) {
    if (labels[t] == ignore_index) continue;
    for (int64_t j = 0; j < V; ++j) {
      const size_t i = t * sz(V) + sz(j);
      const double p = std::exp(logits[i] - lse[t]);
      d[i] = dloss[t] * ((1 + 2 * z_loss * lse[t]) * p - (j == labels[t] ? 1 - label_smoothing : 0) -
                         label_smoothing / static_cast<double>(V));
    }
  }
  return d;
}

}  // namespace xhal::golden

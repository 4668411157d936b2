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

LinearGradients linear_backward(const std::vector<double>& dout, const std::vector<double>& x,
                                const std::vector<double>& w, int64_t M, int64_t N, int64_t K) {
  require(dout.size() == sz(M * N) && x.size() == sz(M * K) && w.size() == sz(N * K),
          "linear_backward: dout must be [M,N], x [M,K] and w [N,K]");
  LinearGradients g{std::vector<double>(sz(M * K), 0.0), std::vector<double>(sz(N * K), 0.0),
                    std::vector<double>(sz(N), 0.0)};
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      const double d = dout[sz(m * N + n)];
      g.dbias[sz(n)] += d;
      for (int64_t k = 0; k < K; ++k) {
        g.dx[sz(m * K + k)] += d * w[sz(n * K + k)];
        g.dw[sz(n * K + k)] += d * x[sz(m * K + k)];
      }
    }
  }
  return g;
}

std::vector<double> embedding_backward(const std::vector<int64_t>& ids, const std::vector<double>& dout, int64_t V,
                                       int64_t D, int64_t padding_idx) {
  require(dout.size() == ids.size() * sz(D), "embedding_backward: dout must be [T,D] with T = ids.size()");
  std::vector<double> dtable(sz(V * D), 0.0);
  for (size_t t = 0; t < ids.size(); ++t) {
    require(ids[t] >= 0 && ids[t] < V, "embedding_backward: ids must be in 0..V-1");
    if (ids[t] == padding_idx) continue;
    for (int64_t d = 0; d < D; ++d) dtable[sz(ids[t] * D + d)] += dout[t * sz(D) + sz(d)];
  }
  return dtable;
}

}  // namespace xhal::golden

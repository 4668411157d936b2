// quantize's float64 reference: an OCP FP8 format's values listed from its definition and the
// nearest one searched for (independent of the kernels' bit arithmetic in xhal/fp8.hpp).
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "golden/golden.hpp"

namespace xhal::golden {
namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("xhal::golden: " + what);
}

size_t sz(int64_t n) { return static_cast<size_t>(n); }

// The finite non-negative values of an OCP FP8 format, in code order (code i's value at [i]).
std::vector<double> fp8_values(bool e4m3) {
  std::vector<double> v;
  const int mant = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  for (int code = 0; code < 128; ++code) {
    const int e = code >> mant, m = code & ((1 << mant) - 1);
    if (e4m3 ? code == 127 : e == 31) break;  // e4m3's NaN, e5m2's infinities and NaNs
    v.push_back(e == 0 ? std::ldexp(double(m), 1 - bias - mant) : std::ldexp(1.0 + double(m) / (1 << mant), e - bias));
  }
  return v;
}

// The nearest value of the format to y (ties: the even code), saturated at the largest; NaN for NaN.
double nearest_code(const std::vector<double>& values, double y) {
  if (std::isnan(y)) return y;
  const double a = std::min(std::fabs(y), values.back());
  size_t best = 0;
  for (size_t i = 1; i < values.size(); ++i) {
    const double d = std::fabs(values[i] - a), b = std::fabs(values[best] - a);
    if (d < b || (d == b && i % 2 == 0)) best = i;
  }
  return std::copysign(values[best], y);
}

}  // namespace

Quantized quantize(const std::vector<double>& x, int64_t N, int64_t group, bool per_tensor, QuantCodes format,
                   bool dynamic, std::vector<double> scales) {
  require(N > 0 && group > 0 && x.size() % sz(N) == 0, "quantize: x must be [M,N], group >= 1");
  std::vector<double> values;  // the format's non-negative values in code order
  if (format == QuantCodes::i8) {
    for (int v = 0; v <= 127; ++v) values.push_back(v);  // ties to the even index: to the even integer
  } else {
    values = fp8_values(format == QuantCodes::e4m3);
  }
  const int64_t M = int64_t(x.size()) / N, groups = (N + group - 1) / group;
  auto group_of = [&](int64_t r, int64_t c) { return per_tensor ? 0 : r * groups + c / group; };
  if (dynamic) {
    scales.assign(per_tensor ? 1 : sz(M * groups), 0.0);
    for (int64_t r = 0; r < M; ++r)
      for (int64_t c = 0; c < N; ++c) {
        double& m = scales[sz(group_of(r, c))];
        const double a = std::fabs(x[sz(r * N + c)]);
        if (std::isnan(a) || a > m) m = a;
      }
    for (double& s : scales) s = s == 0 ? 1.0 : double(float(s / values.back()));
  }
  Quantized q{scales, std::vector<double>(x.size())};
  for (int64_t r = 0; r < M; ++r)
    for (int64_t c = 0; c < N; ++c) {
      // x times the f32 reciprocal of the scale, in f32 (the kernels' two IEEE operations), then
      // its nearest code: rounding the exact quotient straight to fp8 can differ.
      const float inverse = 1.0f / float(scales[sz(group_of(r, c))]);
      const double y = double(float(x[sz(r * N + c)]) * inverse);
      q.values[sz(r * N + c)] = std::isnan(y) && format == QuantCodes::i8 ? 0.0 : nearest_code(values, y);
    }
  return q;
}

std::vector<double> linear_scaled(const std::vector<double>& x, const std::vector<double>& x_scale,
                                  const std::vector<double>& w, const std::vector<double>& w_scale,
                                  const std::vector<double>& bias, int64_t M, int64_t N, int64_t K) {
  require(x_scale.size() == 1 || x_scale.size() == sz(M), "linear_scaled: x_scale must hold 1 or M scales");
  require(w_scale.size() == 1 || w_scale.size() == sz(N), "linear_scaled: w_scale must hold 1 or N scales");
  std::vector<double> out = linear(x, w, {}, M, N, K);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      const double scale = x_scale[x_scale.size() == 1 ? 0 : sz(m)] * w_scale[w_scale.size() == 1 ? 0 : sz(n)];
      out[sz(m * N + n)] = out[sz(m * N + n)] * scale + (bias.empty() ? 0.0 : bias[sz(n)]);
    }
  return out;
}

std::vector<double> linear_int8(const std::vector<double>& x, const std::vector<double>& x_scale,
                                const std::vector<double>& w, const std::vector<double>& w_scale,
                                const std::vector<double>& bias, int64_t M, int64_t N, int64_t K) {
  require(x_scale.size() == 1 || x_scale.size() == sz(M), "linear_int8: x_scale must hold 1 or M scales");
  require(w_scale.size() == 1 || w_scale.size() == sz(N), "linear_int8: w_scale must hold 1 or N scales");
  const std::vector<double> sums = linear(x, w, {}, M, N, K);  // integers below 2^53: exact
  std::vector<double> out(sums.size());
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      const float scale =
          float(x_scale[x_scale.size() == 1 ? 0 : sz(m)]) * float(w_scale[w_scale.size() == 1 ? 0 : sz(n)]);
      const float b = bias.empty() ? 0.0f : float(bias[sz(n)]);
      out[sz(m * N + n)] = double(std::fma(float(sums[sz(m * N + n)]), scale, b));
    }
  return out;
}

}  // namespace xhal::golden

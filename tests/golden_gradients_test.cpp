// The float64 reference gradients against central differences of the float64 forward references:
// for L = sum(dout * f(inputs)), each reference gradient must match (L(v + h) - L(v - h)) / 2h
// element by element. rope is linear, so its backward is checked as the transpose:
// <dout, R x> = <R^T dout, x>.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "golden/golden.hpp"
#include "golden/gradients.hpp"

namespace xhal::golden {
namespace {

std::vector<double> random_values(size_t n, std::mt19937& rng, double lo = -2, double hi = 2) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = dist(rng);
  return v;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// Expects grad[i] to be dL/dv[i] for L(v) = loss(v), by central differences.
void expect_gradient(const std::vector<double>& v, const std::vector<double>& grad,
                     const std::function<double(const std::vector<double>&)>& loss, const char* what) {
  ASSERT_EQ(v.size(), grad.size()) << what;
  const double h = 1e-6;
  for (size_t i = 0; i < v.size(); ++i) {
    std::vector<double> plus = v, minus = v;
    plus[i] += h, minus[i] -= h;
    const double numeric = (loss(plus) - loss(minus)) / (2 * h);
    EXPECT_NEAR(grad[i], numeric, 1e-6 * (1 + std::abs(numeric))) << what << " element " << i;
  }
}

TEST(GoldenGradients, RmsNorm) {
  std::mt19937 rng(7);
  const size_t M = 3, N = 7;
  const double eps = 1e-3;
  const auto x = random_values(M * N, rng), w = random_values(N, rng), dout = random_values(M * N, rng);
  const RmsNormGradients g = rms_norm_backward(dout, x, w, eps);
  expect_gradient(
      x, g.dx, [&](const std::vector<double>& v) { return dot(dout, rms_norm(v, w, eps)); }, "dx");
  expect_gradient(
      w, g.dweight, [&](const std::vector<double>& v) { return dot(dout, rms_norm(x, v, eps)); }, "dweight");
}

TEST(GoldenGradients, Swiglu) {
  std::mt19937 rng(8);
  const size_t n = 40;
  const auto gate = random_values(n, rng, -6, 6), up = random_values(n, rng), dout = random_values(n, rng);
  const SwigluGradients g = swiglu_backward(dout, gate, up);
  expect_gradient(
      gate, g.dgate, [&](const std::vector<double>& v) { return dot(dout, swiglu(v, up)); }, "dgate");
  expect_gradient(
      up, g.dup, [&](const std::vector<double>& v) { return dot(dout, swiglu(gate, v)); }, "dup");
}

TEST(GoldenGradients, Linear) {
  std::mt19937 rng(11);
  const int64_t M = 3, N = 4, K = 5;
  const auto x = random_values(size_t(M * K), rng), w = random_values(size_t(N * K), rng);
  const auto bias = random_values(size_t(N), rng), dout = random_values(size_t(M * N), rng);
  const LinearGradients g = linear_backward(dout, x, w, M, N, K);
  expect_gradient(
      x, g.dx, [&](const std::vector<double>& v) { return dot(dout, linear(v, w, bias, M, N, K)); }, "dx");
  expect_gradient(
      w, g.dw, [&](const std::vector<double>& v) { return dot(dout, linear(x, v, bias, M, N, K)); }, "dw");
  expect_gradient(
      bias, g.dbias, [&](const std::vector<double>& v) { return dot(dout, linear(x, w, v, M, N, K)); }, "dbias");
}

TEST(GoldenGradients, Embedding) {
  std::mt19937 rng(12);
  const int64_t V = 5, D = 3;
  const std::vector<int64_t> ids = {4, 0, 4, 2, 4, 1};
  const auto table = random_values(size_t(V * D), rng), dout = random_values(ids.size() * size_t(D), rng);
  expect_gradient(
      table, embedding_backward(ids, dout, V, D, -1),
      [&](const std::vector<double>& v) { return dot(dout, embedding(ids, v, D)); }, "dtable");
  // padding_idx's row gets nothing (PyTorch's nn.Embedding: the padding row is never trained).
  const auto padded = embedding_backward(ids, dout, V, D, 4);
  for (int64_t d = 0; d < D; ++d) EXPECT_EQ(padded[size_t(4 * D + d)], 0.0);
  EXPECT_EQ(padded[0], embedding_backward(ids, dout, V, D, -1)[0]);
}

TEST(GoldenGradients, Attention) {
  std::mt19937 rng(13);
  const int64_t B = 1, Sq = 5, Sk = 7, Hq = 4, Hkv = 2, D = 3, Dv = 2;  // GQA, Dv != D, Sq < Sk
  const auto q = random_values(size_t(B * Sq * Hq * D), rng), k = random_values(size_t(B * Sk * Hkv * D), rng);
  const auto v = random_values(size_t(B * Sk * Hkv * Dv), rng), dout = random_values(size_t(B * Sq * Hq * Dv), rng);
  for (const AttentionMask& mask : {AttentionMask{0.6, false}, AttentionMask{0.6, true, -1, -1, 0},
                                    AttentionMask{0.9, true, 2, -1, 1.5}, AttentionMask{0.5, false, 1, 1, 0}}) {
    const auto out = [&](const std::vector<double>& qv, const std::vector<double>& kv, const std::vector<double>& vv) {
      return attention(qv, kv, vv, B, Sq, Sk, Hq, Hkv, D, Dv, mask).out;
    };
    const AttentionGradients g = attention_backward(dout, q, k, v, B, Sq, Sk, Hq, Hkv, D, Dv, mask);
    expect_gradient(
        q, g.dq, [&](const std::vector<double>& x) { return dot(dout, out(x, k, v)); }, "dq");
    expect_gradient(
        k, g.dk, [&](const std::vector<double>& x) { return dot(dout, out(q, x, v)); }, "dk");
    expect_gradient(
        v, g.dv, [&](const std::vector<double>& x) { return dot(dout, out(q, k, x)); }, "dv");
  }
  // varlen: each sequence as its own batched attention.
  const std::vector<int64_t> cu_q = {0, 2, 5}, cu_k = {0, 3, 7};
  const AttentionMask causal{0.6, true};
  const auto gv = attention_varlen_backward(dout, q, k, v, cu_q, cu_k, Hq, Hkv, D, Dv, causal);
  const auto outv = [&](const std::vector<double>& qv, const std::vector<double>& kv, const std::vector<double>& vv) {
    return attention_varlen(qv, kv, vv, cu_q, cu_k, Hq, Hkv, D, Dv, causal).out;
  };
  expect_gradient(
      q, gv.dq, [&](const std::vector<double>& x) { return dot(dout, outv(x, k, v)); }, "varlen dq");
  expect_gradient(
      k, gv.dk, [&](const std::vector<double>& x) { return dot(dout, outv(q, x, v)); }, "varlen dk");
}

TEST(GoldenGradients, CrossEntropy) {
  std::mt19937 rng(10);
  const int64_t T = 4, V = 9;
  const std::vector<int64_t> labels = {3, -100, 0, 8};
  const auto logits = random_values(size_t(T * V), rng, -3, 3), dloss = random_values(size_t(T), rng);
  for (const auto& [smoothing, z] : {std::pair{0.0, 0.0}, {0.1, 0.0}, {0.0, 0.01}, {0.2, 0.05}}) {
    const auto d = cross_entropy_backward(logits, labels, V, dloss, -100, smoothing, z);
    expect_gradient(
        logits, d,
        [&](const std::vector<double>& v) { return dot(dloss, cross_entropy(v, labels, V, -100, smoothing, z).loss); },
        "dlogits");
  }
}

TEST(GoldenGradients, RopeIsTheTranspose) {
  std::mt19937 rng(9);
  const int64_t T = 5, H = 3, D = 10;
  const std::vector<int64_t> positions = {0, 4, 2, 9, 1};
  for (const int64_t rotary_dim : {int64_t(6), D}) {
    for (const bool neox : {true, false}) {
      const auto cache = rope_cache(10, rotary_dim, 10000.0);
      const auto x = random_values(size_t(T * H * D), rng), dout = random_values(size_t(T * H * D), rng);
      std::vector<double> rx = x, rt_dout = dout;
      rope(rx, positions, H, D, cache, rotary_dim, neox);
      rope_backward(rt_dout, positions, H, D, cache, rotary_dim, neox);
      EXPECT_NEAR(dot(dout, rx), dot(rt_dout, x), 1e-10 * (1 + std::abs(dot(dout, rx))))
          << "rotary_dim " << rotary_dim << " neox " << neox;
      // And it undoes the forward rotation.
      rope_backward(rx, positions, H, D, cache, rotary_dim, neox);
      for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(rx[i], x[i], 1e-12) << i;
    }
  }
}

}  // namespace
}  // namespace xhal::golden

// Conformance of rms_norm, fused_add_rms_norm, layer_norm, swiglu and swiglu_packed.
#include <fmt/format.h>

#include <cmath>

#include "conformance.hpp"
#include "golden/golden.hpp"
#include "row_shapes.hpp"

namespace xhal::test {
namespace {

TEST_P(Conformance, RmsNorm) {
  for (const auto& [shape, layout] : kRowShapes) {
    SCOPED_TRACE(fmt::format("shape [{}]", fmt::join(shape, ",")));
    const int64_t N = shape.back();
    auto x = random(shape, layout);
    auto w = random({N});
    auto out = poisoned(shape, layout);
    ops::rms_norm(x, w, 1e-5f, out);
    expect_close(out.download("out"), golden::rms_norm(x.values(), w.values(), 1e-5), dtype(), "out");
  }
}

TEST_P(Conformance, FusedAddRmsNorm) {
  for (const auto& [shape, layout] : kRowShapes) {
    SCOPED_TRACE(fmt::format("shape [{}]", fmt::join(shape, ",")));
    const int64_t N = shape.back();
    auto x = random(shape, layout);
    auto residual = random(shape);
    auto w = random({N});
    auto out = poisoned(shape);
    ops::fused_add_rms_norm(x, residual, w, 1e-6f, out);
    auto expected = golden::fused_add_rms_norm(x.values(), residual.values(), w.values(), 1e-6);
    expect_close(out.download("out"), expected.out, dtype(), "out");
    expect_close(residual.download("residual"), expected.residual, dtype(), "residual");
  }
}

// With and without bias; rows offset from 0 (a mean of 3 over a spread of 1), where E[x^2] - mean^2
// would lose digits.
TEST_P(Conformance, LayerNorm) {
  for (const bool with_bias : {true, false}) {
    for (const auto& [shape, layout] : kRowShapes) {
      SCOPED_TRACE(fmt::format("shape [{}] bias {}", fmt::join(shape, ","), with_bias));
      const int64_t N = shape.back();
      auto x = TestTensor::random(shape, dtype(), device(), rng(), 2, 4, layout);
      auto w = random({N}), b = random({N});
      auto out = poisoned(shape, layout);
      ops::layer_norm(x, w, with_bias ? &b.view() : nullptr, 1e-5f, out);
      expect_close(out.download("out"),
                   golden::layer_norm(x.values(), w.values(), with_bias ? b.values() : std::vector<double>{}, 1e-5),
                   dtype(), "out");
    }
  }
}

TEST_P(Conformance, Swiglu) {
  for (const auto& [shape, layout] : kRowShapes) {
    SCOPED_TRACE(fmt::format("shape [{}]", fmt::join(shape, ",")));
    auto gate = TestTensor::random(shape, dtype(), device(), rng(), -6, 6, layout);
    auto up = random(shape);
    auto out = poisoned(shape, layout);
    ops::swiglu(gate, up, out);
    expect_close(out.download("out"), golden::swiglu(gate.values(), up.values()), dtype(), "out");
  }
}

TEST_P(Conformance, SwigluPacked) {
  for (const auto& [shape, layout] : kRowShapes) {
    SCOPED_TRACE(fmt::format("shape [{}]", fmt::join(shape, ",")));
    std::vector<int64_t> packed = shape;
    packed.back() *= 2;
    auto x = TestTensor::random(packed, dtype(), device(), rng(), -6, 6, layout);
    auto out = poisoned(shape);
    ops::swiglu_packed(x, out);
    expect_close(out.download("out"), golden::swiglu_packed(x.values(), shape.back()), dtype(), "out");
  }
}

// Non-finite inputs give what the reference gives: NaN where it has NaN, the same infinities, the
// other elements within tolerance. (The CPU rounds bf16 results of these ops without a NaN test,
// relying on how x86 arithmetic carries NaNs: this is the check.) Rows long enough for the vector
// loops and their tails; outputs start finite, so an element left unwritten shows.
TEST_P(Conformance, NonFiniteInputs) {
  const int64_t M = 4, N = 520;
  const double nan = std::nan(""), inf = INFINITY;
  auto filled = [&](int64_t rows, int64_t cols) {
    return TestTensor::of({rows, cols}, dtype(), device(), std::vector<double>(size_t(rows * cols), 0.75));
  };
  // A NaN in row 0 (that row all NaN after a norm), +inf in row 1, -NaN in row 3's tail.
  const std::vector<std::pair<int64_t, double>> x_specials = {{3, nan}, {N + 100, inf}, {3 * N + 517, -nan}};
  {
    auto x = random({M, N}).with(x_specials);
    auto w = TestTensor::of({N}, dtype(), device(), [&] {
      std::vector<double> v = random({N}).values();
      v[7] = nan;  // column 7 NaN in every row
      return v;
    }());
    auto out = filled(M, N);
    ops::rms_norm(x, w, 1e-5f, out);
    expect_close_nan_for_nan(out.download("out"), golden::rms_norm(x.values(), w.values(), 1e-5), dtype(),
                             "rms_norm out");
    auto residual = random({M, N}).with({{2 * N + 40, -inf}, {2 * N + 41, nan}});
    auto out2 = filled(M, N);
    const std::vector<double> residual_before = residual.values();
    ops::fused_add_rms_norm(x, residual, w, 1e-5f, out2);
    auto expected = golden::fused_add_rms_norm(x.values(), residual_before, w.values(), 1e-5);
    expect_close_nan_for_nan(out2.download("out"), expected.out, dtype(), "fused_add_rms_norm out");
    expect_close_nan_for_nan(residual.download("residual"), expected.residual, dtype(), "fused_add_rms_norm residual");
  }
  {
    // NaN in gate and in up, both infinities in gate, and infinities in up against finite gates.
    auto gate = TestTensor::random({M, N}, dtype(), device(), rng(), -6, 6)
                    .with({{5, nan}, {N + 9, inf}, {N + 10, -inf}, {3 * N + 515, -nan}, {3 * N + 517, -inf}});
    auto up = random({M, N}).with({{6, nan}, {2 * N + 30, inf}, {2 * N + 31, -inf}, {3 * N + 519, nan}});
    auto out = filled(M, N);
    ops::swiglu(gate, up, out);
    expect_close_nan_for_nan(out.download("out"), golden::swiglu(gate.values(), up.values()), dtype(), "swiglu out");
    std::vector<double> packed;
    for (int64_t r = 0; r < M; ++r) {
      packed.insert(packed.end(), gate.values().begin() + r * N, gate.values().begin() + (r + 1) * N);
      packed.insert(packed.end(), up.values().begin() + r * N, up.values().begin() + (r + 1) * N);
    }
    auto x = TestTensor::of({M, 2 * N}, dtype(), device(), packed);
    auto out2 = filled(M, N);
    ops::swiglu_packed(x, out2);
    expect_close_nan_for_nan(out2.download("out"), golden::swiglu_packed(x.values(), N), dtype(), "swiglu_packed out");
  }
}

TEST_P(Conformance, Linear) {
  struct Case {
    int64_t M, N, K;
    bool bias;
  };
  // {3, 5, 0}: K = 0, out is the bias alone (no row of x or w to read). M from 1 to 16 is decode's
  // few rows (the CPU's dot-product kernel takes them in groups of 1, 2 or 4), 17 and up a GEMM's.
  for (const Case& c : {Case{1, 1, 1, true}, Case{7, 129, 64, false}, Case{129, 33, 1000, true}, Case{3, 5, 0, true},
                        Case{0, 5, 7, true}, Case{17, 250, 96, true}, Case{3, 1100, 64, true}, Case{2, 37, 100, true},
                        Case{16, 70, 200, false}, Case{1, 300, 2048, true}}) {
    SCOPED_TRACE(fmt::format("M {} N {} K {} bias {}", c.M, c.N, c.K, c.bias));
    auto x = random({c.M, c.K});
    auto w = TestTensor::random({c.N, c.K}, dtype(), device(), rng(), -0.1, 0.1);
    auto bias = random({c.N});
    auto out = poisoned({c.M, c.N});
    ops::linear(x, w, c.bias ? &bias.view() : nullptr, out);
    auto expected =
        golden::linear(x.values(), w.values(), c.bias ? bias.values() : std::vector<double>{}, c.M, c.N, c.K);
    expect_close(out.download("out"), expected, dtype(), "out");
  }
}

}  // namespace
}  // namespace xhal::test

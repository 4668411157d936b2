// Conformance of the gradients of the norms and activations: rms_norm_backward,
// fused_add_rms_norm_backward, swiglu_backward, swiglu_packed_backward; their non-finite inputs; and
// deterministic mode's promise (the same bits twice) for the ones that reduce across rows.
#include <fmt/format.h>

#include <cmath>

#include "conformance.hpp"
#include "golden/golden.hpp"
#include "golden/gradients.hpp"
#include "row_shapes.hpp"

namespace xhal::test {
namespace {

// The row shapes, plus many rows (GPU blocks then loop over rows, adding each group's weight
// gradient into its block's partial sums).
std::vector<RowShape> gradient_shapes() {
  std::vector<RowShape> shapes = kRowShapes;
  shapes.push_back({{9000, 64}, {}});
  // More rows than one wave of groups holds at row lengths whose rows the GPU stages through shared
  // memory (each group then prefetches its next row while it works on one).
  shapes.push_back({{4000, 520}, {}});
  shapes.push_back({{600, 4096}, {}});
  return shapes;
}

// In place (dx over dresidual, dx over x): a short and a padded shape suffice (the kernels read an
// element before writing it whatever the shape).
bool also_in_place(const RowShape& s) { return s.shape.back() == 129 || s.layout.pad != 0; }

TEST_P(Conformance, RmsNormBackward) {
  for (const auto& [shape, layout] : gradient_shapes()) {
    SCOPED_TRACE(fmt::format("shape [{}]", fmt::join(shape, ",")));
    const int64_t N = shape.back();
    auto dout = random(shape, layout);
    auto x = random(shape);
    auto w = random({N});
    auto dx = poisoned(shape, layout);
    auto dw = poisoned({N});
    ops::rms_norm_backward(dout, x, w, 1e-5f, dx, dw);
    const auto expected = golden::rms_norm_backward(dout.values(), x.values(), w.values(), 1e-5);
    expect_close(dx.download("dx"), expected.dx, dtype(), "dx");
    expect_close(dw.download("dweight"), expected.dweight, dtype(), "dweight");
  }
}

TEST_P(Conformance, FusedAddRmsNormBackward) {
  for (const auto& [shape, layout] : gradient_shapes()) {
    for (const bool in_place : {false, true}) {
      if (in_place && !also_in_place({shape, layout})) continue;
      SCOPED_TRACE(fmt::format("shape [{}]{}", fmt::join(shape, ","), in_place ? ", dx is dresidual" : ""));
      const int64_t N = shape.back();
      auto dout = random(shape);
      auto residual = random(shape, layout);
      auto w = random({N});
      auto dresidual = random(shape, layout);
      auto dx = poisoned(shape);
      auto dw = poisoned({N});
      ops::fused_add_rms_norm_backward(dout, residual, w, 1e-6f, dresidual, in_place ? dresidual : dx, dw);
      auto expected = golden::rms_norm_backward(dout.values(), residual.values(), w.values(), 1e-6);
      for (size_t i = 0; i < expected.dx.size(); ++i) expected.dx[i] += dresidual.values()[i];
      expect_close(dresidual.download("dresidual"), expected.dx, dtype(), "dresidual");
      if (!in_place) expect_close(dx.download("dx"), expected.dx, dtype(), "dx");
      expect_close(dw.download("dweight"), expected.dweight, dtype(), "dweight");
    }
  }
}

TEST_P(Conformance, SwigluBackward) {
  for (const auto& [shape, layout] : gradient_shapes()) {
    SCOPED_TRACE(fmt::format("shape [{}]", fmt::join(shape, ",")));
    auto dout = random(shape, layout);
    auto gate = TestTensor::random(shape, dtype(), device(), rng(), -6, 6, layout);
    auto up = random(shape);
    auto dgate = poisoned(shape, layout);
    auto dup = poisoned(shape);
    ops::swiglu_backward(dout, gate, up, dgate, dup);
    const auto expected = golden::swiglu_backward(dout.values(), gate.values(), up.values());
    expect_close(dgate.download("dgate"), expected.dgate, dtype(), "dgate");
    expect_close(dup.download("dup"), expected.dup, dtype(), "dup");
  }
  // In place: dgate over gate, dup over up.
  auto dout = random({5, 264});
  auto gate = TestTensor::random({5, 264}, dtype(), device(), rng(), -6, 6);
  auto up = random({5, 264});
  const auto expected = golden::swiglu_backward(dout.values(), gate.values(), up.values());
  ops::swiglu_backward(dout, gate, up, gate, up);
  expect_close(gate.download("dgate (in place)"), expected.dgate, dtype(), "dgate in place");
  expect_close(up.download("dup (in place)"), expected.dup, dtype(), "dup in place");
}

// x's rows: [gate | up]; dx's the same.
std::vector<double> join_halves(const std::vector<double>& a, const std::vector<double>& b, int64_t N) {
  std::vector<double> out;
  for (size_t r = 0; r * size_t(N) < a.size(); ++r) {
    out.insert(out.end(), a.begin() + long(r * size_t(N)), a.begin() + long((r + 1) * size_t(N)));
    out.insert(out.end(), b.begin() + long(r * size_t(N)), b.begin() + long((r + 1) * size_t(N)));
  }
  return out;
}

TEST_P(Conformance, SwigluPackedBackward) {
  for (const auto& [shape, layout] : gradient_shapes()) {
    for (const bool in_place : {false, true}) {
      if (in_place && !also_in_place({shape, layout})) continue;
      SCOPED_TRACE(fmt::format("shape [{}]{}", fmt::join(shape, ","), in_place ? ", dx is x" : ""));
      const int64_t N = shape.back();
      std::vector<int64_t> packed = shape;
      packed.back() *= 2;
      auto dout = random(shape);
      auto gate = TestTensor::random(shape, dtype(), device(), rng(), -6, 6);
      auto up = random(shape);
      auto x = TestTensor::of(packed, dtype(), device(), join_halves(gate.values(), up.values(), N), layout);
      auto dx = poisoned(packed, layout);
      ops::swiglu_packed_backward(dout, x, in_place ? x : dx);
      const auto expected = golden::swiglu_backward(dout.values(), gate.values(), up.values());
      expect_close((in_place ? x : dx).download("dx"), join_halves(expected.dgate, expected.dup, N), dtype(), "dx");
    }
  }
}

// Non-finite values give what the reference gives: a NaN or infinity in a row of x makes that
// row's dx and every element of dweight NaN; NaN in dout or gate stays where it is.
TEST_P(Conformance, NormActivationBackwardNonFinite) {
  const int64_t M = 4, N = 520;
  const double nan = std::nan(""), inf = INFINITY;
  {
    auto dout = random({M, N}).with({{3 * N + 7, nan}});
    auto x = random({M, N}).with({{N + 100, inf}});
    auto w = random({N});
    auto dx = random({M, N});
    auto dw = random({N});
    ops::rms_norm_backward(dout, x, w, 1e-5f, dx, dw);
    const auto expected = golden::rms_norm_backward(dout.values(), x.values(), w.values(), 1e-5);
    expect_close_nan_for_nan(dx.download("dx"), expected.dx, dtype(), "rms_norm_backward dx");
    expect_close_nan_for_nan(dw.download("dweight"), expected.dweight, dtype(), "rms_norm_backward dweight");
  }
  {
    auto dout = random({M, N}).with({{5, nan}});
    auto gate = TestTensor::random({M, N}, dtype(), device(), rng(), -6, 6).with({{N + 9, nan}, {2 * N + 3, inf}});
    auto up = random({M, N}).with({{3 * N + 519, -inf}});
    auto dgate = random({M, N});
    auto dup = random({M, N});
    ops::swiglu_backward(dout, gate, up, dgate, dup);
    const auto expected = golden::swiglu_backward(dout.values(), gate.values(), up.values());
    expect_close_nan_for_nan(dgate.download("dgate"), expected.dgate, dtype(), "swiglu_backward dgate");
    expect_close_nan_for_nan(dup.download("dup"), expected.dup, dtype(), "swiglu_backward dup");
  }
}

// Deterministic mode: the ops that reduce across rows give the same bits twice.
TEST_P(Conformance, DeterministicGradients) {
  registry::set_deterministic(true);
  const int64_t M = 1000, N = 256;  // more rows than the CPU's 128 blocks, several GPU blocks
  auto dout = random({M, N}), x = random({M, N}), w = random({N}), dresidual = random({M, N});
  std::vector<std::vector<double>> runs;
  for (int run = 0; run < 2; ++run) {
    auto dx = poisoned({M, N});
    auto dw = poisoned({N});
    ops::rms_norm_backward(dout, x, w, 1e-5f, dx, dw);
    auto dx2 = poisoned({M, N});
    auto dw2 = poisoned({N});
    auto dres = TestTensor::of({M, N}, dtype(), device(), dresidual.values());
    ops::fused_add_rms_norm_backward(dout, x, w, 1e-5f, dres, dx2, dw2);
    runs.push_back(dw.download("dweight"));
    runs.push_back(dx.download("dx"));
    runs.push_back(dw2.download("fused dweight"));
    runs.push_back(dx2.download("fused dx"));
  }
  registry::set_deterministic(false);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(runs[i], runs[i + 4]) << "output " << i << " differs between two runs";
}

}  // namespace
}  // namespace xhal::test

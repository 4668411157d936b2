// Conformance of gelu_and_mul and gelu_and_mul_packed, exact (erf) and tanh-approximated: the row
// shapes of the other row-wise ops, gates over [-8, 8] (far into gelu's negative tail), and
// non-finite gates and ups.
#include <fmt/format.h>

#include <cmath>

#include "conformance.hpp"
#include "golden/golden.hpp"
#include "row_shapes.hpp"

namespace xhal::test {
namespace {

using ops::GeluApproximation;

const GeluApproximation kApproximations[] = {GeluApproximation::erf, GeluApproximation::tanh};

TEST_P(Conformance, GeluAndMul) {
  for (const GeluApproximation approximation : kApproximations) {
    const bool tanh = approximation == GeluApproximation::tanh;
    for (const auto& [shape, layout] : kRowShapes) {
      SCOPED_TRACE(fmt::format("{} shape [{}]", tanh ? "tanh" : "erf", fmt::join(shape, ",")));
      auto gate = TestTensor::random(shape, dtype(), device(), rng(), -8, 8, layout);
      auto up = random(shape);
      auto out = poisoned(shape, layout);
      ops::gelu_and_mul(gate, up, out, approximation);
      expect_close(out.download("out"), golden::gelu_and_mul(gate.values(), up.values(), tanh), dtype(), "out");
    }
  }
}

TEST_P(Conformance, GeluAndMulPacked) {
  for (const GeluApproximation approximation : kApproximations) {
    const bool tanh = approximation == GeluApproximation::tanh;
    for (const auto& [shape, layout] : kRowShapes) {
      SCOPED_TRACE(fmt::format("{} shape [{}]", tanh ? "tanh" : "erf", fmt::join(shape, ",")));
      std::vector<int64_t> packed = shape;
      packed.back() *= 2;
      auto x = TestTensor::random(packed, dtype(), device(), rng(), -8, 8, layout);
      auto out = poisoned(shape);
      ops::gelu_and_mul_packed(x, out, approximation);
      expect_close(out.download("out"), golden::gelu_and_mul_packed(x.values(), shape.back(), tanh), dtype(), "out");
    }
  }
}

// NaN and both infinities in the gate (+inf: +inf times up; -inf: NaN), infinities and NaN in up,
// in the vector loops and the rows' tails; outputs start finite, so an element left unwritten shows.
TEST_P(Conformance, GeluAndMulNonFinite) {
  const int64_t M = 4, N = 520;
  const double nan = std::nan(""), inf = INFINITY;
  for (const GeluApproximation approximation : kApproximations) {
    const bool tanh = approximation == GeluApproximation::tanh;
    SCOPED_TRACE(tanh ? "tanh" : "erf");
    auto gate = TestTensor::random({M, N}, dtype(), device(), rng(), -8, 8)
                    .with({{5, nan}, {N + 9, inf}, {N + 10, -inf}, {3 * N + 515, -nan}, {3 * N + 518, -inf}});
    auto up = random({M, N}).with({{6, nan}, {2 * N + 30, inf}, {2 * N + 31, -inf}, {3 * N + 519, nan}});
    auto out = TestTensor::of({M, N}, dtype(), device(), std::vector<double>(size_t(M * N), 0.75));
    ops::gelu_and_mul(gate, up, out, approximation);
    expect_close_nan_for_nan(out.download("out"), golden::gelu_and_mul(gate.values(), up.values(), tanh), dtype(),
                             "out");
  }
}

}  // namespace
}  // namespace xhal::test

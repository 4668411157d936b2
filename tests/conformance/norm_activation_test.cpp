// Conformance of rms_norm, fused_add_rms_norm, swiglu and swiglu_packed.
#include <fmt/format.h>

#include "conformance.hpp"
#include "golden/golden.hpp"

namespace xhal::test {
namespace {

struct RowShape {
  std::vector<int64_t> shape;  // [..., N]
  Layout layout;
};

// Odd sizes, rank 3, an empty batch, a padded (strided) layout, and rows long enough for each
// GPU kernel shape (one warp, two and four warps per row, rows past the registers).
const std::vector<RowShape> kRowShapes = {
    {{1, 1}, {}},       {{7, 129}, {}},        {{129, 1000}, {}}, {{3, 5, 64}, {}},
    {{0, 64}, {}},      {{33, 96}, {{}, 5}},   {{2, 7, 80}, {{1, 0, 2}, 3}},
    {{9, 2056}, {}},    {{5, 4096}, {}},       {{3, 8200}, {}},   {{2, 20000}, {}},
};

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

TEST_P(Conformance, Linear) {
  struct Case {
    int64_t M, N, K;
    bool bias;
  };
  for (const Case& c : {Case{1, 1, 1, true}, Case{7, 129, 64, false}, Case{129, 33, 1000, true},
                        Case{0, 5, 7, true}, Case{17, 250, 96, true}, Case{3, 1100, 64, true}}) {
    SCOPED_TRACE(fmt::format("M {} N {} K {} bias {}", c.M, c.N, c.K, c.bias));
    auto x = random({c.M, c.K});
    auto w = TestTensor::random({c.N, c.K}, dtype(), device(), rng(), -0.1, 0.1);
    auto bias = random({c.N});
    auto out = poisoned({c.M, c.N});
    ops::linear(x, w, c.bias ? &bias.view() : nullptr, out);
    auto expected = golden::linear(x.values(), w.values(),
                                   c.bias ? bias.values() : std::vector<double>{}, c.M, c.N, c.K);
    expect_close(out.download("out"), expected, dtype(), "out");
  }
}

}  // namespace
}  // namespace xhal::test

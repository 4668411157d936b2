// Conformance of softmax: the row shapes of the norms (odd sizes, padded rows, rank 3, an empty
// batch), rows far from zero, a few long rows (which GPUs split over blocks; aligned and not), in
// place, and masked (-inf), NaN and +inf entries.
#include <fmt/format.h>

#include <cmath>

#include "conformance.hpp"
#include "golden/golden.hpp"
#include "row_shapes.hpp"

namespace xhal::test {
namespace {

std::vector<RowShape> softmax_shapes() {
  std::vector<RowShape> shapes = kRowShapes;
  shapes.push_back({{2, 70000}, {}});
  shapes.push_back({{3, 100003}, {}});
  return shapes;
}

TEST_P(Conformance, Softmax) {
  for (const auto& [shape, layout] : softmax_shapes()) {
    for (const bool in_place : {false, true}) {
      SCOPED_TRACE(fmt::format("shape [{}]{}", fmt::join(shape, ","), in_place ? ", in place" : ""));
      auto x = TestTensor::random(shape, dtype(), device(), rng(), -8, 8, layout);
      const auto expected = golden::softmax(x.values(), shape.back());
      if (in_place) {
        ops::softmax(x, x);
        expect_close(x.download("x (out in place)"), expected, dtype(), "out");
      } else {
        auto out = poisoned(shape, layout);
        ops::softmax(x, out);
        expect_close(out.download("out"), expected, dtype(), "out");
      }
    }
  }
}

// exp(x - max): values near 1000 must not overflow.
TEST_P(Conformance, SoftmaxFarFromZero) {
  auto x = TestTensor::random({7, 129}, dtype(), device(), rng(), 1000, 1016);
  auto out = poisoned({7, 129});
  ops::softmax(x, out);
  expect_close(out.download("out"), golden::softmax(x.values(), 129), dtype(), "out");
}

// Masked entries give 0 and the rest sum to 1; a row of -inf, or one holding a NaN or +inf, comes
// out NaN. Long rows too, where whole GPU spans of a row are masked.
TEST_P(Conformance, SoftmaxNonFinite) {
  const double nan = std::nan(""), inf = INFINITY;
  for (const int64_t N : {int64_t(3000), int64_t(70000)}) {
    SCOPED_TRACE(fmt::format("rows of {}", N));
    const int64_t M = 6;
    std::vector<std::pair<int64_t, double>> specials = {{5, -inf},
                                                        {17, -inf},
                                                        {N - 1, -inf},  // row 0: some masked
                                                        {2 * N + N / 2, nan},  // row 2: a NaN
                                                        {3 * N + 10, inf}};  // row 3: +inf
    for (int64_t i = 0; i < N; ++i) specials.push_back({N + i, -inf});  // row 1: all masked
    for (int64_t i = 0; i < N; ++i) {
      if (i != N - 3) specials.push_back({4 * N + i, -inf});  // row 4: one entry left
    }
    for (int64_t i = 0; i < N / 2; ++i) specials.push_back({5 * N + i, -inf});  // row 5: its first half masked
    auto x = random({M, N}).with(specials);
    auto out = poisoned({M, N});
    ops::softmax(x, out);
    const auto expected = golden::softmax(x.values(), N);
    ASSERT_TRUE(std::isnan(expected[size_t(N)]) && std::isnan(expected[size_t(2 * N)]) &&
                std::isnan(expected[size_t(3 * N)]));
    ASSERT_EQ(expected[size_t(5 * N - 3)], 1.0);
    expect_close_nan_for_nan(out.download("out"), expected, dtype(), "out");
  }
}

}  // namespace
}  // namespace xhal::test

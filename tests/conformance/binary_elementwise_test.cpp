// Conformance of add and mul: the row shapes of the norms (odd sizes, padded rows, rank 3, an empty
// batch), y of x's shape or one row for every row of x, out apart or in place over x or y, and
// non-finite values (inf - inf, 0 inf and NaN give NaN).
#include <fmt/format.h>

#include <cmath>
#include <functional>

#include "conformance.hpp"
#include "golden/golden.hpp"
#include "row_shapes.hpp"

namespace xhal::test {
namespace {

using BinaryOp = std::function<void(const TensorView&, const TensorView&, const TensorView&)>;

void check_binary(DType dtype, Device device, std::mt19937_64& rng, const BinaryOp& op, bool product) {
  const auto random = [&](const std::vector<int64_t>& shape, Layout layout = {}) {
    return TestTensor::random(shape, dtype, device, rng, -1, 1, layout);
  };
  for (const auto& [shape, layout] : kRowShapes) {
    for (const bool row : {false, true}) {
      for (const int target : {0, 1, 2}) {  // out apart, over x, over y
        if (row && target == 2) continue;  // a broadcast row cannot hold the output
        SCOPED_TRACE(fmt::format("shape [{}], y {}, out {}", fmt::join(shape, ","), row ? "a row" : "full",
                                 target == 0   ? "apart"
                                 : target == 1 ? "over x"
                                               : "over y"));
        auto x = random(shape, layout);
        auto y = row ? random({shape.back()}) : random(shape, layout);
        const auto expected = golden::elementwise(x.values(), y.values(), product);
        if (target == 0) {
          auto out = TestTensor::poisoned(shape, dtype, device, layout);
          op(x, y, out);
          expect_close(out.download("out"), expected, dtype, "out");
        } else {
          op(x, y, target == 1 ? x : y);
          expect_close((target == 1 ? x : y).download("out (in place)"), expected, dtype, "out");
        }
      }
    }
  }
  const double nan = std::nan(""), inf = INFINITY;
  auto x = random({3, 40}).with({{0, inf}, {1, inf}, {2, 0.0}, {3, nan}, {44, -inf}});
  auto y = random({3, 40}).with({{0, -inf}, {1, inf}, {2, inf}, {45, nan}});
  auto out = TestTensor::poisoned({3, 40}, dtype, device);
  op(x, y, out);
  expect_close_nan_for_nan(out.download("out"), golden::elementwise(x.values(), y.values(), product), dtype, "out");
}

TEST_P(Conformance, Add) {
  check_binary(
      dtype(), device(), rng(),
      [](const TensorView& x, const TensorView& y, const TensorView& o) { ops::add(x, y, o); }, false);
}

TEST_P(Conformance, Mul) {
  check_binary(
      dtype(), device(), rng(),
      [](const TensorView& x, const TensorView& y, const TensorView& o) { ops::mul(x, y, o); }, true);
}

}  // namespace
}  // namespace xhal::test

// Conformance of argmax: odd and vocabulary-sized rows, padded rows, rank 3, an empty batch, i32
// and i64 indices, ties (values drawn from a few integers), NaN and infinities, values optional.
#include <fmt/format.h>

#include <cmath>

#include "conformance.hpp"
#include "golden/golden.hpp"
#include "tied_values.hpp"

namespace xhal::test {
namespace {

struct ArgmaxCase {
  std::vector<int64_t> shape;  // [..., V]
  int64_t pad;
  DType index_type;
  bool ties, with_values;
};

const ArgmaxCase kArgmaxCases[] = {
    {{1, 1}, 0, DType::i64, false, true},      {{7, 129}, 0, DType::i32, false, true},
    {{3, 5, 1000}, 0, DType::i64, true, true}, {{0, 64}, 0, DType::i64, false, true},
    {{33, 96}, 5, DType::i32, true, false},    {{2, 128256}, 0, DType::i64, false, true},
    {{64, 4099}, 8, DType::i32, true, true},   {{5}, 0, DType::i64, true, true},
};

TEST_P(Conformance, Argmax) {
  for (const auto& [shape, pad, index_type, ties, with_values] : kArgmaxCases) {
    SCOPED_TRACE(fmt::format("shape [{}] pad {} {} ties {}", fmt::join(shape, ","), pad, dtype_name(index_type), ties));
    const Layout layout{{}, pad};
    auto logits = ties ? tied_values(shape, dtype(), device(), rng(), layout) : random(shape, layout);
    const std::vector<int64_t> lead(shape.begin(), shape.end() - 1);
    int64_t rows = 1;
    for (int64_t d : lead) rows *= d;
    auto indices = ints(lead, std::vector<int64_t>(size_t(rows), -7), index_type);
    auto values = poisoned(lead);
    ops::argmax(logits, indices, with_values ? &values.view() : nullptr);
    const auto expected = golden::argmax(logits.values(), shape.back());
    const auto got = indices.download("indices");
    ASSERT_EQ(got.size(), expected.size());
    for (size_t r = 0; r < got.size(); ++r) ASSERT_EQ(int64_t(got[r]), expected[r]) << "row " << r;
    if (!with_values) continue;
    std::vector<double> expected_values(expected.size());
    for (size_t r = 0; r < expected.size(); ++r) {
      expected_values[r] = logits.values()[r * size_t(shape.back()) + size_t(expected[r])];
    }
    expect_close(values.download("values"), expected_values, dtype(), "values");
  }
}

// NaN beats every number (the first NaN), +inf every finite value, and a row of -inf picks 0.
TEST_P(Conformance, ArgmaxNonFinite) {
  const int64_t M = 5, V = 3000;
  const double nan = std::nan(""), inf = INFINITY;
  std::vector<std::pair<int64_t, double>> specials = {{7, inf},           {2500, nan},
                                                      {2999, nan},  // row 0: the first NaN
                                                      {V + 11, inf},      {V + 2000, inf},  // row 1: the first +inf
                                                      {2 * V + 2999, nan}};  // row 2: a NaN at the end
  for (int64_t i = 0; i < V; ++i) specials.push_back({3 * V + i, -inf});  // row 3: all -inf
  specials.push_back({4 * V + 17, -inf});  // row 4: finite max
  auto logits = random({M, V}).with(specials);
  auto indices = ints({M}, std::vector<int64_t>(M, -7), DType::i64);
  ops::argmax(logits, indices);
  const auto got = indices.download("indices");
  const auto expected = golden::argmax(logits.values(), V);
  ASSERT_EQ(expected[0], 2500);
  ASSERT_EQ(expected[1], 11);
  ASSERT_EQ(expected[3], 0);
  for (size_t r = 0; r < got.size(); ++r) EXPECT_EQ(int64_t(got[r]), expected[r]) << "row " << r;
}

}  // namespace
}  // namespace xhal::test

// Conformance of top_k against the float64 stable sort: short rows (a warp a row on GPUs) and long
// ones (a block a row), k from 1 to V and to XHAL_TOP_K_MAX_K, padded rows, rank 1 and 3, an empty
// batch, i32 and i64 indices, ties drawn from a few integers (the k-th value shared by many, more
// of them than a block's buffer holds in one case), NaN, infinities and signed zeros.
#include <fmt/format.h>

#include <cmath>

#include "conformance.hpp"
#include "golden/golden.hpp"
#include "tied_values.hpp"

namespace xhal::test {
namespace {

struct TopKCase {
  std::vector<int64_t> shape;  // [..., V]
  int64_t pad, k;
  DType index_type;
  bool ties;
};

const TopKCase kTopKCases[] = {
    {{1, 1}, 0, 1, DType::i64, false},
    {{7, 129}, 0, 5, DType::i32, false},
    {{1000, 256}, 0, 8, DType::i32, true},
    {{3, 5, 1000}, 0, 32, DType::i64, true},
    {{0, 64}, 0, 3, DType::i64, false},
    {{33, 96}, 5, 96, DType::i32, true},
    {{2, 128256}, 0, 50, DType::i64, false},
    {{64, 4099}, 8, 1000, DType::i32, true},
    {{4, 20000}, 0, XHAL_TOP_K_MAX_K, DType::i64, true},
    {{5}, 0, 5, DType::i64, true},
    {{3, 3000}, 0, 3000, DType::i32, false},
};

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

bool same_value(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

// Runs top_k on x (rows of V) and compares its indices and values with the golden ones.
void expect_top_k(const TestTensor& x, const std::vector<int64_t>& shape, int64_t k, DType index_type, DType dtype,
                  Device device) {
  std::vector<int64_t> out_shape = shape;
  out_shape.back() = k;
  const int64_t V = shape.back(), rows = V == 0 ? 0 : numel(shape) / V;
  auto values = TestTensor::poisoned(out_shape, dtype, device);
  auto indices = TestTensor::of(out_shape, index_type, device, std::vector<double>(size_t(rows * k), -7.0));
  ops::top_k(x, values, indices);
  const auto expected = golden::top_k(x.values(), V, k);
  const auto got = indices.download("indices");
  const auto got_values = values.download("values");
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const size_t row = i / size_t(k);
    ASSERT_EQ(int64_t(got[i]), expected[i]) << "row " << row << " rank " << i % size_t(k);
    const double want = x.values()[row * size_t(V) + size_t(expected[i])];
    ASSERT_TRUE(same_value(got_values[i], want))
        << "row " << row << " rank " << i % size_t(k) << ": value " << got_values[i] << ", expected " << want;
  }
}

TEST_P(Conformance, TopK) {
  for (const auto& [shape, pad, k, index_type, ties] : kTopKCases) {
    SCOPED_TRACE(
        fmt::format("shape [{}] pad {} k {} {} ties {}", fmt::join(shape, ","), pad, k, dtype_name(index_type), ties));
    const Layout layout{{}, pad};
    auto x = ties ? tied_values(shape, dtype(), device(), rng(), layout) : random(shape, layout);
    expect_top_k(x, shape, k, index_type, dtype(), device());
  }
}

// NaN above every number (NaNs among themselves by position), +inf above finite values, -0 and +0
// equal, rows of -inf: for short rows and long ones.
TEST_P(Conformance, TopKNonFinite) {
  const double nan = std::nan(""), inf = INFINITY;
  for (const int64_t V : {200, 3000}) {
    SCOPED_TRACE(fmt::format("V {}", V));
    const int64_t k = 10;
    std::vector<std::pair<int64_t, double>> specials = {{V - 1, nan}, {5, nan}, {V / 2, nan}, {7, inf}};  // row 0
    for (int64_t i = 0; i < V; ++i) {
      specials.push_back({V + i, -inf});  // row 1: all -inf
      specials.push_back({2 * V + i, i % 3 == 0 ? -0.0 : i % 3 == 1 ? 0.0 : -1.0});  // row 2: signed zeros
      if (i != 100 && i != V - 1) specials.push_back({3 * V + i, -inf});  // row 3: -inf but two
    }
    specials.push_back({3 * V + 100, nan});
    specials.push_back({3 * V + V - 1, inf});
    auto x = random({4, V}).with(specials);
    const auto expected = golden::top_k(x.values(), V, k);
    ASSERT_EQ(std::vector<int64_t>(expected.begin(), expected.begin() + 4), (std::vector<int64_t>{5, V / 2, V - 1, 7}));
    ASSERT_EQ(expected[k], 0);
    ASSERT_EQ(expected[2 * k + 2], 3);  // zeros of either sign by position, -1 after them
    ASSERT_EQ(expected[3 * k + 2], 0);
    expect_top_k(x, {4, V}, k, DType::i64, dtype(), device());
  }
}

}  // namespace
}  // namespace xhal::test

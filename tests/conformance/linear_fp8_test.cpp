// Conformance of linear_fp8 against float64: e4m3 and e5m2 operands (each pairing), per-tensor and
// per-row scales (and the two mixed), with and without a bias, padded rows, odd shapes (which the
// tensor-core path declines, so the portable one is checked too), K = 0 (out = bias), and NaN
// codes spreading to the rows and columns they touch.
#include <fmt/format.h>

#include <cmath>

#include "conformance.hpp"
#include "golden/golden.hpp"

namespace xhal::test {
namespace {

struct Fp8LinearCase {
  int64_t M, N, K;
  DType x_format, w_format;
  bool x_per_row, w_per_row, bias;
  int64_t pad;  // codes after each row of x and w
};

const Fp8LinearCase kFp8LinearCases[] = {
    {64, 128, 256, DType::f8_e4m3, DType::f8_e4m3, true, true, true, 0},
    {33, 48, 96, DType::f8_e4m3, DType::f8_e4m3, false, false, false, 16},
    {7, 64, 80, DType::f8_e4m3, DType::f8_e4m3, true, false, true, 0},
    {9, 32, 64, DType::f8_e4m3, DType::f8_e5m2, false, true, false, 0},
    {1, 32, 512, DType::f8_e5m2, DType::f8_e4m3, true, true, true, 0},
    {5, 37, 50, DType::f8_e4m3, DType::f8_e4m3, true, true, true, 3},
    {3, 17, 19, DType::f8_e5m2, DType::f8_e5m2, false, true, false, 5},
    {130, 144, 48, DType::f8_e4m3, DType::f8_e4m3, true, true, false, 0},
    {4, 16, 0, DType::f8_e4m3, DType::f8_e4m3, true, true, true, 0},
};

// A scale list: one f32 scale, or one a row (row-dependent, so a row mix-up shows).
std::vector<double> scales(int64_t rows, bool per_row, double base) {
  std::vector<double> s(per_row ? size_t(rows) : 1);
  for (size_t i = 0; i < s.size(); ++i) s[i] = double(float(base * double(i % 7 + 1)));
  return s;
}

TestTensor scale_tensor(const std::vector<double>& s, bool per_row, Device device) {
  return TestTensor::of(per_row ? std::vector<int64_t>{int64_t(s.size()), 1} : std::vector<int64_t>{1}, DType::f32,
                        device, s);
}

// fp8 codes spread over [-range, range): random values rounded to the format.
TestTensor codes(const std::vector<int64_t>& shape, DType format, Device device, std::mt19937_64& rng, double range,
                 int64_t pad) {
  return TestTensor::random(shape, format, device, rng, -range, range, Layout{{}, pad});
}

TEST_P(Conformance, LinearFp8) {
  for (const Fp8LinearCase& c : kFp8LinearCases) {
    SCOPED_TRACE(fmt::format("M {} N {} K {} x {} w {} per-row x {} w {} bias {} pad {}", c.M, c.N, c.K,
                             dtype_name(c.x_format), dtype_name(c.w_format), c.x_per_row, c.w_per_row, c.bias, c.pad));
    auto x = codes({c.M, c.K}, c.x_format, device(), rng(), 8.0, c.pad);
    auto w = codes({c.N, c.K}, c.w_format, device(), rng(), 8.0, c.pad);
    const auto xs = scales(c.M, c.x_per_row, 0.01), ws = scales(c.N, c.w_per_row, 0.003);
    auto x_scale = scale_tensor(xs, c.x_per_row, device()), w_scale = scale_tensor(ws, c.w_per_row, device());
    auto bias = random({c.N});
    auto out = poisoned({c.M, c.N});
    ASSERT_NO_THROW(ops::linear_fp8(x, x_scale, w, w_scale, c.bias ? &bias.view() : nullptr, out));
    const auto expected = golden::linear_scaled(x.values(), xs, w.values(), ws,
                                                c.bias ? bias.values() : std::vector<double>{}, c.M, c.N, c.K);
    expect_close(out.download("out"), expected, dtype(), "out");
  }
}

// A NaN code of x makes its row of out NaN, one of w (e5m2) its column: NaN exactly where float64
// has it, the rest finite and close. (Infinite e5m2 codes cannot be written through the saturating
// conversion the test tensors use.)
TEST_P(Conformance, LinearFp8NonFinite) {
  const int64_t M = 6, N = 32, K = 64;
  auto x = codes({M, K}, DType::f8_e4m3, device(), rng(), 4.0, 0).with({{2 * K + 5, std::nan("")}});
  auto w = codes({N, K}, DType::f8_e5m2, device(), rng(), 4.0, 0).with({{3 * K + 1, std::nan("")}});
  const auto xs = scales(M, true, 0.01), ws = scales(N, false, 0.02);
  auto x_scale = scale_tensor(xs, true, device()), w_scale = scale_tensor(ws, false, device());
  auto out = poisoned({M, N});
  ops::linear_fp8(x, x_scale, w, w_scale, nullptr, out);
  const auto expected = golden::linear_scaled(x.values(), xs, w.values(), ws, {}, M, N, K);
  EXPECT_TRUE(std::isnan(expected[size_t(2 * N)]) && std::isnan(expected[size_t(4 * N + 3)]) &&
              !std::isnan(expected[size_t(4 * N + 2)]));
  expect_close_nan_for_nan(out.download("out"), expected, dtype(), "out");
}

}  // namespace
}  // namespace xhal::test

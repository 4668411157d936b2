// Conformance of linear_fp8 and linear_int8 against float64.
// linear_fp8: e4m3 and e5m2 operands (each pairing), per-tensor and per-row scales (and the two
// mixed), with and without a bias, padded rows, odd shapes (which the tensor-core path declines,
// so the portable one is checked too), K = 0 (out = bias), and NaN codes spreading to the rows and
// columns they touch.
// linear_int8, bit for bit: the products are summed exactly and the epilogue is defined in f32
// (docs/ops.md), so every backend must give the float64 reference's value rounded once to out's
// dtype; the same kinds of cases, and sums past 2^24 (codes of ±127 over K = 4096), whose
// conversion to f32 rounds.
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

struct Int8LinearCase {
  int64_t M, N, K;
  bool x_per_row, w_per_row, bias;
  int64_t pad;  // codes after each row of x and w
  bool extreme;  // codes of ±127 only
};

const Int8LinearCase kInt8LinearCases[] = {
    {64, 128, 256, true, true, true, 0, false},  {33, 48, 96, false, false, false, 16, false},
    {7, 64, 80, true, false, true, 0, false},    {9, 32, 64, false, true, false, 0, false},
    {1, 32, 512, true, true, true, 0, false},    {5, 37, 50, true, true, true, 3, false},
    {130, 144, 48, true, true, false, 0, false}, {4, 16, 0, true, true, true, 0, false},
    {3, 16, 4096, true, true, true, 0, true},
};

// Integer codes in [-127, 127]; `extreme`: 127 everywhere but the first `flipped` + r codes of row
// r, which are -127 (sums of 127 x 127 products near 2^26, where f32 keeps every fourth integer).
TestTensor int8_codes(int64_t rows, int64_t K, bool extreme, int64_t flipped, Device device, std::mt19937_64& rng,
                      int64_t pad) {
  std::uniform_int_distribution<int> code(-127, 127);
  std::vector<double> v(size_t(rows * K));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < K; ++k) {
      v[size_t(r * K + k)] = !extreme ? double(code(rng)) : k < flipped + r ? -127.0 : 127.0;
    }
  return TestTensor::of({rows, K}, DType::i8, device, v, Layout{{}, pad});
}

TEST_P(Conformance, LinearInt8) {
  for (const Int8LinearCase& c : kInt8LinearCases) {
    SCOPED_TRACE(fmt::format("M {} N {} K {} per-row x {} w {} bias {} pad {} extreme {}", c.M, c.N, c.K, c.x_per_row,
                             c.w_per_row, c.bias, c.pad, c.extreme));
    auto x = int8_codes(c.M, c.K, c.extreme, 0, device(), rng(), c.pad);
    auto w = int8_codes(c.N, c.K, c.extreme, 1, device(), rng(), c.pad);
    const auto xs = scales(c.M, c.x_per_row, 0.01), ws = scales(c.N, c.w_per_row, 0.003);
    auto x_scale = scale_tensor(xs, c.x_per_row, device()), w_scale = scale_tensor(ws, c.w_per_row, device());
    auto bias = random({c.N});
    auto out = poisoned({c.M, c.N});
    ASSERT_NO_THROW(ops::linear_int8(x, x_scale, w, w_scale, c.bias ? &bias.view() : nullptr, out));
    const auto exact = golden::linear_int8(x.values(), xs, w.values(), ws,
                                           c.bias ? bias.values() : std::vector<double>{}, c.M, c.N, c.K);
    // The reference's f32 values rounded once to out's dtype, as a tensor of it holds them.
    const auto expected = TestTensor::of({c.M, c.N}, dtype(), Device::cpu(), exact).values();
    const auto got = out.download("out");
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i], expected[i]) << "element " << i << " (float64 value " << exact[i] << ")";
    }
  }
}

}  // namespace
}  // namespace xhal::test

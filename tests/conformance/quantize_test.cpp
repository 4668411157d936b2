// Conformance of quantize and dequantize against float64: per tensor, per row and per block
// (a partial last block), dynamic and static scales, e4m3, e5m2 and int8, padded rows, a row of zeros
// (scale 1), values past the format's largest (saturated), a NaN (its group's scale and codes NaN),
// and dequantize of the codes back.
#include <fmt/format.h>

#include <cmath>

#include "conformance.hpp"
#include "golden/golden.hpp"

namespace xhal::test {
namespace {

using Granularity = ops::QuantizeParams::Granularity;

struct QuantCase {
  std::vector<int64_t> shape;  // [..., N]
  int64_t pad;
  Granularity granularity;
  int64_t block;
  DType format;
  bool dynamic;
};

const QuantCase kQuantCases[] = {
    {{7, 300}, 0, Granularity::per_row, 128, DType::f8_e4m3, true},
    {{4, 2, 520}, 0, Granularity::per_block, 128, DType::f8_e5m2, true},
    {{64, 4096}, 0, Granularity::per_tensor, 128, DType::f8_e4m3, true},
    {{33, 100}, 4, Granularity::per_tensor, 128, DType::f8_e5m2, false},
    {{5, 77}, 0, Granularity::per_row, 128, DType::f8_e4m3, false},
    {{3, 1000}, 8, Granularity::per_block, 64, DType::f8_e4m3, true},
    {{9}, 0, Granularity::per_block, 4, DType::f8_e4m3, true},
    {{6, 520}, 0, Granularity::per_row, 128, DType::i8, true},
    {{33, 100}, 4, Granularity::per_block, 32, DType::i8, false},
    {{64, 4096}, 0, Granularity::per_tensor, 128, DType::i8, true},
};

golden::QuantCodes codes_of(DType format) {
  return format == DType::f8_e4m3   ? golden::QuantCodes::e4m3
         : format == DType::f8_e5m2 ? golden::QuantCodes::e5m2
                                    : golden::QuantCodes::i8;
}

bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

TEST_P(Conformance, Quantize) {
  for (const QuantCase& c : kQuantCases) {
    SCOPED_TRACE(fmt::format("shape [{}] pad {} granularity {} block {} {} dynamic {}", fmt::join(c.shape, ","), c.pad,
                             int(c.granularity), c.block, dtype_name(c.format), c.dynamic));
    const int64_t N = c.shape.back(), rows = [&] {
      int64_t r = 1;
      for (size_t d = 0; d + 1 < c.shape.size(); ++d) r *= c.shape[d];
      return r;
    }();
    // Values spread over the format's range, a row of zeros, and static scales that push some
    // values past the largest code.
    auto base = random(c.shape, Layout{{}, c.pad});
    std::vector<std::pair<int64_t, double>> specials;
    for (int64_t i = 0; i < N; ++i) specials.push_back({i, 0.0});  // row 0: zeros
    if (rows > 2) {
      for (int64_t i = 0; i < N; ++i) specials.push_back({2 * N + i, base.values()[size_t(2 * N + i)] * 3000.0});
    }
    auto x = base.with(specials);
    const int64_t group = c.granularity == Granularity::per_block ? c.block : N;
    const bool per_tensor = c.granularity == Granularity::per_tensor;
    const int64_t groups = per_tensor ? 1 : rows * ((N + group - 1) / group);
    std::vector<int64_t> scale_shape = {1};
    if (!per_tensor) {
      scale_shape.assign(c.shape.begin(), c.shape.end());
      scale_shape.back() = c.granularity == Granularity::per_row ? 1 : (N + c.block - 1) / c.block;
    }
    std::vector<double> given(static_cast<size_t>(groups));
    for (size_t g = 0; g < given.size(); ++g) given[g] = double(float(0.002 * double(g % 5 + 1)));  // f32 scales
    auto scale =
        TestTensor::of(scale_shape, DType::f32, device(), c.dynamic ? std::vector<double>(given.size(), -1.0) : given);
    auto q = TestTensor::poisoned(c.shape, c.format, device());
    const ops::QuantizeParams params{c.granularity, c.block, c.dynamic};
    ops::quantize(x, q, scale, params);
    const golden::Quantized expected = golden::quantize(x.values(), N, group, per_tensor, codes_of(c.format), c.dynamic,
                                                        c.dynamic ? std::vector<double>{} : given);
    const auto got_scale = scale.download("scale");
    for (size_t g = 0; g < got_scale.size(); ++g) {
      ASSERT_TRUE(same(got_scale[g], expected.scales[g]))
          << "scale " << g << ": " << got_scale[g] << ", expected " << expected.scales[g];
    }
    const auto got = q.download("q");
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_TRUE(same(got[i], expected.values[i]))
          << "element " << i << ": " << got[i] << ", expected " << expected.values[i] << " (x " << x.values()[i] << ")";
    }
    // Back to the float dtype: code * scale, rounded once.
    auto out = poisoned(c.shape);
    ops::dequantize(q, scale, out, params);
    std::vector<double> back(got.size());
    for (size_t i = 0; i < back.size(); ++i) {
      const int64_t r = int64_t(i) / N, col = int64_t(i) % N;
      back[i] = got[i] * got_scale[size_t(per_tensor ? 0 : r * ((N + group - 1) / group) + col / group)];
    }
    expect_close(out.download("out"), back, dtype(), "dequantized");
  }
}

// dequantize alone: codes spread over the format (both formats, subnormals and the largest
// included), scales a block of 64 along padded rows of an odd length, and per tensor.
TEST_P(Conformance, Dequantize) {
  for (const DType format : {DType::f8_e4m3, DType::f8_e5m2, DType::i8}) {
    for (const auto granularity : {Granularity::per_block, Granularity::per_tensor}) {
      SCOPED_TRACE(fmt::format("{} granularity {}", dtype_name(format), int(granularity)));
      const int64_t M = 6, N = 203, blocks = (N + 63) / 64;
      const double largest = format == DType::f8_e4m3 ? 448.0 : format == DType::f8_e5m2 ? 57344.0 : 127.0;
      std::vector<double> codes(size_t(M * N));
      std::uniform_real_distribution<double> exponent(-18.0, std::log2(largest));
      for (size_t i = 0; i < codes.size(); ++i) {
        codes[i] = (i % 2 ? -1.0 : 1.0) * std::exp2(exponent(rng()));
        if (format == DType::i8) codes[i] = std::round(codes[i]);
      }
      codes[0] = largest;
      auto q = TestTensor::of({M, N}, format, device(), codes, Layout{{}, 5});
      const bool per_tensor = granularity == Granularity::per_tensor;
      std::vector<double> scales(per_tensor ? 1 : size_t(M * blocks));
      for (size_t g = 0; g < scales.size(); ++g) scales[g] = double(float(0.001 * double(g + 1)));
      auto scale = TestTensor::of(per_tensor ? std::vector<int64_t>{1} : std::vector<int64_t>{M, blocks}, DType::f32,
                                  device(), scales);
      auto out = poisoned({M, N});
      ops::dequantize(q, scale, out, {granularity, 64});
      const auto stored = q.values();  // the codes' values as the format holds them
      std::vector<double> expected(stored.size());
      for (size_t i = 0; i < expected.size(); ++i) {
        const size_t g = per_tensor ? 0 : i / size_t(N) * size_t(blocks) + i % size_t(N) / 64;
        expected[i] = double(float(stored[i]) * float(scales[g]));
      }
      expect_close(out.download("out"), expected, dtype(), "out");
    }
  }
}

// A NaN makes its group's dynamic scale NaN and every code of the group NaN (int8, which has no
// NaN: 0, and dequantizing gives NaN through the scale); an infinity makes its group's scale
// infinite. Other groups are untouched.
TEST_P(Conformance, QuantizeNonFinite) {
  for (const DType format : {DType::f8_e4m3, DType::i8}) {
    SCOPED_TRACE(dtype_name(format));
    const int64_t N = 256;
    auto x = random({4, N}).with({{N + 17, std::nan("")}, {2 * N + 3, INFINITY}});
    auto scale = TestTensor::of({4, 2}, DType::f32, device(), std::vector<double>(8, -1.0));
    auto q = TestTensor::poisoned({4, N}, format, device());
    ops::quantize(x, q, scale, {Granularity::per_block, 128, true});
    const auto expected = golden::quantize(x.values(), N, 128, false, codes_of(format), true, {});
    const auto got_scale = scale.download("scale"), got = q.download("q");
    EXPECT_TRUE(std::isnan(got_scale[2]));
    EXPECT_TRUE(std::isinf(got_scale[4]));
    for (size_t g = 0; g < got_scale.size(); ++g) EXPECT_TRUE(same(got_scale[g], expected.scales[g])) << "scale " << g;
    for (size_t i = 0; i < got.size(); ++i) ASSERT_TRUE(same(got[i], expected.values[i])) << "element " << i;
  }
}

}  // namespace
}  // namespace xhal::test

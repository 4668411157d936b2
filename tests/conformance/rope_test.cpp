// Conformance of rope and rope_backward (both styles, partial rotary_dim, i32 and i64 positions, strided q/k as
// views into a packed qkv buffer) and rope_cache.
#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "conformance.hpp"
#include "golden/golden.hpp"
#include "golden/gradients.hpp"

namespace xhal::test {
namespace {

// rope, or rope_backward (the inverse rotation), over the same cases.
void check_rope(Device device, DType dtype, std::mt19937_64& rng, bool backward) {
  struct Case {
    int64_t T, Hq, Hkv, D, rotary_dim;
    RopeStyle style;
    DType positions;
    Layout layout;
  };
  const int64_t max_pos = 4096;
  for (const Case& c :
       {Case{1, 4, 1, 64, 64, RopeStyle::neox, DType::i32, {}}, Case{7, 8, 8, 80, 40, RopeStyle::gptj, DType::i64, {}},
        Case{129, 4, 4, 96, 96, RopeStyle::gptj, DType::i32, {{}, 7}},
        Case{33, 6, 2, 128, 64, RopeStyle::neox, DType::i64, {{1, 0, 2}, 0}},
        Case{5, 2, 1, 256, 256, RopeStyle::neox, DType::i32, {}},
        Case{0, 2, 1, 64, 64, RopeStyle::neox, DType::i32, {}}}) {
    SCOPED_TRACE(fmt::format("T {} Hq {} Hkv {} D {} rotary {} {}", c.T, c.Hq, c.Hkv, c.D, c.rotary_dim,
                             c.style == RopeStyle::neox ? "neox" : "gptj"));
    auto q = TestTensor::random({c.T, c.Hq, c.D}, dtype, device, rng, -1, 1, c.layout);
    auto k = TestTensor::random({c.T, c.Hkv, c.D}, dtype, device, rng, -1, 1, c.layout);
    std::vector<int64_t> pos(size_t(c.T));
    for (auto& p : pos) p = int64_t(rng() % max_pos);
    auto positions = TestTensor::of({c.T}, c.positions, device, std::vector<double>(pos.begin(), pos.end()));
    Tensor cache = ops::rope_cache(max_pos, c.rotary_dim, 10000.0, device);
    const auto table = golden::rope_cache(max_pos, c.rotary_dim, 10000.0);
    auto q_expected = q.values(), k_expected = k.values();
    const bool neox = c.style == RopeStyle::neox;
    if (backward) {
      ops::rope_backward(q, k, positions, cache, c.style);
      golden::rope_backward(q_expected, pos, c.Hq, c.D, table, c.rotary_dim, neox);
      golden::rope_backward(k_expected, pos, c.Hkv, c.D, table, c.rotary_dim, neox);
    } else {
      ops::rope(q, k, positions, cache, c.style);
      golden::rope(q_expected, pos, c.Hq, c.D, table, c.rotary_dim, neox);
      golden::rope(k_expected, pos, c.Hkv, c.D, table, c.rotary_dim, neox);
    }
    expect_close(q.download("q"), q_expected, dtype, "q");
    expect_close(k.download("k"), k_expected, dtype, "k");
  }
}

TEST_P(Conformance, Rope) { check_rope(device(), dtype(), rng(), false); }
TEST_P(Conformance, RopeBackward) { check_rope(device(), dtype(), rng(), true); }

// NaN and infinity give what the reference gives: in q, and in a cache row, whose NaN has every
// mantissa bit set (0x7FFFFFFF: rounded to bf16 by adding 0x8000 without a NaN test, it would
// become -0; the CPU tests a row for non-finite values before it rounds without one). Outputs
// are compared NaN for NaN, the rest within tolerance.
TEST_P(Conformance, RopeNonFinite) {
  const int64_t T = 2, H = 2, D = 128, max_pos = 4;
  std::vector<double> table = golden::rope_cache(max_pos, D, 10000.0);
  std::vector<float> raw(table.begin(), table.end());
  const uint32_t all_ones_nan = 0x7FFFFFFFu;
  std::memcpy(&raw[size_t(1 * D + 5)], &all_ones_nan, sizeof(float));  // position 1, cos[5]
  raw[size_t(1 * D + D / 2 + 9)] = INFINITY;  // position 1, sin[9]
  table[size_t(1 * D + 5)] = std::nan("");
  table[size_t(1 * D + D / 2 + 9)] = INFINITY;
  Tensor cache = Tensor::from_host(raw.data(), {max_pos, D}, DType::f32, device());
  std::vector<double> qv = random({T, H, D}).values();
  qv[3] = std::nan("");
  auto q = TestTensor::of({T, H, D}, dtype(), device(), qv);
  auto k = random({T, 1, D});
  const std::vector<int64_t> pos = {2, 1};
  auto positions = ints({T}, pos);
  ops::rope(q, k, positions, cache, RopeStyle::neox);
  auto q_expected = q.values(), k_expected = k.values();
  golden::rope(q_expected, pos, H, D, table, D, true);
  golden::rope(k_expected, pos, 1, D, table, D, true);
  expect_close_nan_for_nan(q.download("q"), q_expected, dtype(), "q");
  expect_close_nan_for_nan(k.download("k"), k_expected, dtype(), "k");
}

TEST_P(Conformance, RopeCache) {
  Tensor cache = ops::rope_cache(300, 48, 500000.0, device());
  std::vector<float> got(static_cast<size_t>(cache.numel()));
  cache.copy_to_host(got.data());
  const auto expected = golden::rope_cache(300, 48, 500000.0);
  // The cache is f32 whatever the op dtype.
  expect_close(std::vector<double>(got.begin(), got.end()), expected, DType::f32, "cache");
}

// rope_cache with each rope_scaling type against the float64 golden (transformers' formulas), at
// positions past the original context where the scaled low frequencies differ most.
TEST_P(Conformance, RopeCacheScaled) {
  using Type = ops::RopeScaling::Type;
  struct Case {
    const char* name;
    Type type;
    golden::RopeScaling g;
    double theta;
    int64_t rotary_dim;
  };
  const Case cases[] = {
      {"linear", Type::linear, {"linear", 4.0}, 10000.0, 64},
      {"llama3", Type::llama3, {"llama3", 8.0, 8192, 1.0, 4.0}, 500000.0, 128},
      {"yarn", Type::yarn, {"yarn", 4.0, 4096}, 10000.0, 128},
      {"yarn, attention_factor and betas", Type::yarn, {"yarn", 16.0, 2048, 1, 4, 16.0, 2.0, 1.25}, 1000000.0, 62},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ops::RopeScaling scaling;
    scaling.type = c.type;
    scaling.factor = c.g.factor;
    scaling.original_max_position = c.g.original_max_position;
    scaling.low_freq_factor = c.g.low_freq_factor;
    scaling.high_freq_factor = c.g.high_freq_factor;
    scaling.beta_fast = c.g.beta_fast;
    scaling.beta_slow = c.g.beta_slow;
    scaling.attention_factor = c.g.attention_factor;
    Tensor cache = ops::rope_cache(9000, c.rotary_dim, c.theta, scaling, device());
    std::vector<float> got(static_cast<size_t>(cache.numel()));
    cache.copy_to_host(got.data());
    expect_close(std::vector<double>(got.begin(), got.end()), golden::rope_cache(9000, c.rotary_dim, c.theta, c.g),
                 DType::f32, "cache");
  }
}

// The frequencies of Llama 3.1 8B's and of a YaRN config, read back from row 1 of the cache
// (angle f_i): values computed in Python from transformers' llama3 and yarn initialisations.
TEST_P(Conformance, RopeCacheScaledKnownFrequencies) {
  auto frequencies = [&](const ops::RopeScaling& scaling, double theta, double magnitude) {
    Tensor cache = ops::rope_cache(2, 128, theta, scaling, device());
    std::vector<float> rows(256);
    cache.copy_to_host(rows.data());
    std::vector<double> f(64);
    for (size_t i = 0; i < 64; ++i) {
      EXPECT_NEAR(std::hypot(rows[128 + i], rows[128 + 64 + i]), magnitude, 1e-6) << "|row 1| at " << i;
      f[i] = std::atan2(rows[128 + 64 + i], rows[128 + i]);
    }
    return f;
  };
  ops::RopeScaling llama3;
  llama3.type = ops::RopeScaling::Type::llama3;
  llama3.factor = 8.0;
  llama3.original_max_position = 8192;
  const auto f = frequencies(llama3, 500000.0, 1.0);
  const std::pair<size_t, double> llama3_expected[] = {{0, 1.0},
                                                       {20, 0.016560440080994446},
                                                       {29, 0.002166570763503359},
                                                       {31, 0.0008567514129196321},
                                                       {34, 0.00017850781276799638},
                                                       {40, 3.428102195952591e-05},
                                                       {63, 3.068925988914511e-07}};
  for (const auto& [i, expected] : llama3_expected) EXPECT_NEAR(f[i], expected, 2e-7 * expected) << "llama3 f_" << i;
  ops::RopeScaling yarn;
  yarn.type = ops::RopeScaling::Type::yarn;
  yarn.factor = 4.0;
  yarn.original_max_position = 4096;
  const auto g = frequencies(yarn, 10000.0, 1.138629436111989);  // 0.1 ln 4 + 1
  const std::pair<size_t, double> yarn_expected[] = {{0, 1.0},
                                                     {15, 0.1154781984689458},
                                                     {20, 0.056234132519034905},
                                                     {30, 0.009488517882700576},
                                                     {40, 0.0013378867023789293},
                                                     {63, 2.8869549617236455e-05}};
  for (const auto& [i, expected] : yarn_expected) EXPECT_NEAR(g[i], expected, 2e-7 * expected) << "yarn f_" << i;
}

}  // namespace
}  // namespace xhal::test

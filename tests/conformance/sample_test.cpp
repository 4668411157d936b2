// Conformance of sample: the distribution of many draws (one row repeated, a step a row) against
// the float64 model, by chi-square (Sample); the same tokens as the CPU backend for vocabulary-sized rows
// with per-row settings; greedy and non-finite rows as argmax; masked tokens never drawn; a
// request's token independent of its batch.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "conformance.hpp"
#include "golden/golden.hpp"

namespace xhal::test {
namespace {

// A [rows, V] tensor of `row` repeated.
TestTensor repeated(const std::vector<double>& row, int64_t rows, DType dtype, Device device, Layout layout = {}) {
  std::vector<double> all;
  for (int64_t r = 0; r < rows; ++r) all.insert(all.end(), row.begin(), row.end());
  return TestTensor::of({rows, int64_t(row.size())}, dtype, device, all, layout);
}

std::vector<int64_t> iota(int64_t n, int64_t from = 0) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = from + i;
  return v;
}

std::vector<int64_t> download_tokens(const TestTensor& tokens) {
  std::vector<int64_t> out;
  for (double t : tokens.download("tokens")) out.push_back(int64_t(t));
  return out;
}

// Chi-square of the counts against the distribution: tokens expected at least 5 times each a bin,
// the others pooled (borderline tokens, which f32 may keep or drop, left out).
void expect_distribution(const std::vector<int64_t>& tokens, const golden::SampleDistribution& d) {
  const size_t V = d.p.size();
  std::vector<double> count(V, 0.0);
  for (int64_t t : tokens) {
    ASSERT_TRUE(t >= 0 && size_t(t) < V) << "token " << t;
    EXPECT_TRUE(d.p[size_t(t)] > 0 || d.borderline[size_t(t)]) << "token " << t << " is not kept";
    count[size_t(t)] += 1;
  }
  const double n = double(tokens.size());
  double chi2 = 0, pooled_seen = 0, pooled_expected = 0;
  int bins = 0;
  for (size_t i = 0; i < V; ++i) {
    if (d.borderline[i]) continue;
    const double e = d.p[i] * n;
    if (e >= 5) {
      chi2 += (count[i] - e) * (count[i] - e) / e;
      ++bins;
    } else {
      pooled_seen += count[i];
      pooled_expected += e;
    }
  }
  if (pooled_expected >= 5) {
    chi2 += (pooled_seen - pooled_expected) * (pooled_seen - pooled_expected) / pooled_expected;
    ++bins;
  }
  ASSERT_GE(bins, 2);
  // About 7 standard deviations above the mean of a chi-square with bins - 1 degrees of freedom.
  const double df = bins - 1;
  EXPECT_LT(chi2, df + 7 * std::sqrt(2 * df) + 10) << bins << " bins";
}

TEST_P(Conformance, Sample) {
  const int64_t V = 37, draws = 4000;
  std::vector<double> row(static_cast<size_t>(V));
  for (double& x : row) x = std::uniform_real_distribution<double>(-3, 3)(rng());
  const auto logits = repeated(TestTensor::of({V}, dtype(), device(), row).values(), draws, dtype(), device());
  const auto steps = ints({draws}, iota(draws), DType::i64);
  struct Case {
    golden::SampleSettings s;
    DType token_type;
  };
  const Case cases[] = {{{1.0, 0, 1.0, 0.0}, DType::i64},
                        {{0.6, 7, 1.0, 0.0}, DType::i32},
                        {{1.0, 0, 0.7, 0.0}, DType::i64},
                        {{1.3, 0, 1.0, 0.1}, DType::i32},
                        {{0.8, 20, 0.9, 0.02}, DType::i64}};
  for (const auto& [s, token_type] : cases) {
    SCOPED_TRACE(fmt::format("temperature {} top_k {} top_p {} min_p {}", s.temperature, s.top_k, s.top_p, s.min_p));
    auto tokens = ints({draws}, std::vector<int64_t>(size_t(draws), -7), token_type);
    ops::SampleParams params{float(s.temperature), s.top_k, float(s.top_p), float(s.min_p), 1234, 0};
    ops::SampleRowParams rows;
    rows.steps = &steps.view();
    ops::sample(logits, tokens, params, rows);
    const std::vector<double> first(logits.values().begin(), logits.values().begin() + V);
    expect_distribution(download_tokens(tokens), golden::sample_distribution(first, s));
  }
}

// Vocabulary-sized rows (one padded) with different settings a row, given as per-row tensors: the
// CPU backend's tokens exactly, and each a kept token of the float64 model.
TEST_P(Conformance, SampleSameTokensAsCpu) {
  const int64_t B = 7, V = 50021;
  for (const int64_t pad : {int64_t(0), int64_t(3)}) {
    SCOPED_TRACE(fmt::format("row padding {}", pad));
    const Layout layout{{}, pad};
    auto logits = TestTensor::random({B, V}, dtype(), device(), rng(), -8, 8, layout);
    auto cpu_logits = TestTensor::of({B, V}, dtype(), Device::cpu(), logits.values());
    const std::vector<double> temperature = {0.7, 1, 1.5, 0, 1, 0.9, 1};
    const std::vector<int64_t> top_k = {0, 50, 0, 0, 1000, 40, 1};
    const std::vector<double> top_p = {1, 0.9, 0.95, 1, 0.5, 0.8, 1};
    const std::vector<double> min_p = {0, 0, 0.05, 0, 0, 0.01, 0};
    const std::vector<int64_t> seeds = {1, 2, 3, 4, 5, 6, 7}, steps = {10, 20, 30, 40, 50, 60, 70};
    std::vector<int64_t> got[2];
    for (int on_cpu = 0; on_cpu < 2; ++on_cpu) {
      const Device d = on_cpu != 0 ? Device::cpu() : device();
      auto t = TestTensor::of({B}, DType::f32, d, temperature);
      auto k = TestTensor::of({B}, DType::i32, d, std::vector<double>(top_k.begin(), top_k.end()));
      auto p = TestTensor::of({B}, DType::f32, d, top_p);
      auto m = TestTensor::of({B}, DType::f32, d, min_p);
      auto s = TestTensor::of({B}, DType::i64, d, std::vector<double>(seeds.begin(), seeds.end()));
      auto st = TestTensor::of({B}, DType::i64, d, std::vector<double>(steps.begin(), steps.end()));
      auto tokens = TestTensor::of({B}, DType::i32, d, std::vector<double>(size_t(B), -7));
      ops::SampleRowParams rows{&t.view(), &k.view(), &p.view(), &m.view(), &s.view(), &st.view()};
      ops::sample(on_cpu != 0 ? cpu_logits : logits, tokens, {}, rows);
      got[on_cpu] = download_tokens(tokens);
    }
    for (int64_t r = 0; r < B; ++r) {
      EXPECT_EQ(got[0][size_t(r)], got[1][size_t(r)]) << "row " << r;
      const std::vector<double> row(logits.values().begin() + r * V, logits.values().begin() + (r + 1) * V);
      const size_t token = size_t(got[0][size_t(r)]);
      ASSERT_LT(token, size_t(V));
      if (temperature[size_t(r)] == 0) {
        EXPECT_EQ(int64_t(token), golden::argmax(row, V)[0]) << "row " << r;
        continue;
      }
      const auto d = golden::sample_distribution(
          row, {temperature[size_t(r)], top_k[size_t(r)], top_p[size_t(r)], min_p[size_t(r)]});
      EXPECT_TRUE(d.p[token] > 0 || d.borderline[token]) << "row " << r << " token " << token;
    }
  }
}

// Greedy rows and rows holding a NaN or +inf take argmax's pick, a row of -inf gives 0, and tokens
// masked with -inf are never drawn while every unmasked one is.
TEST_P(Conformance, SampleGreedyNonFiniteAndMasked) {
  const int64_t V = 3001, masked_rows = 200;
  const double nan = std::nan(""), inf = INFINITY;
  std::vector<std::pair<int64_t, double>> specials = {{2500, nan}, {2999, nan}, {V + 11, inf}, {V + 2000, inf}};
  for (int64_t i = 0; i < V; ++i) specials.push_back({2 * V + i, -inf});  // row 2: all -inf
  const int64_t open[] = {5, 1700, 3000};
  for (int64_t r = 4; r < 4 + masked_rows; ++r) {
    for (int64_t i = 0; i < V; ++i) {
      if (i != open[0] && i != open[1] && i != open[2]) specials.push_back({r * V + i, -inf});
    }
  }
  auto logits = TestTensor::random({4 + masked_rows, V}, dtype(), device(), rng(), -1, 1).with(specials);
  std::vector<double> temperature(size_t(4 + masked_rows), 1.0);
  temperature[3] = 0;  // row 3: greedy
  auto t = TestTensor::of({4 + masked_rows}, DType::f32, device(), temperature);
  auto tokens = ints({4 + masked_rows}, std::vector<int64_t>(size_t(4 + masked_rows), -7), DType::i64);
  ops::SampleRowParams rows;
  rows.temperature = &t.view();
  ops::sample(logits, tokens, {1.0f, 0, 1.0f, 0.0f, 99, 0}, rows);
  const auto got = download_tokens(tokens);
  const auto expected = golden::argmax(logits.values(), V);
  EXPECT_EQ(got[0], 2500);
  EXPECT_EQ(got[1], 11);
  EXPECT_EQ(got[2], 0);
  EXPECT_EQ(got[3], expected[3]);
  int seen[3] = {0, 0, 0};
  for (int64_t r = 4; r < 4 + masked_rows; ++r) {
    const int64_t token = got[size_t(r)];
    const int64_t* at = std::find(std::begin(open), std::end(open), token);
    ASSERT_NE(at, std::end(open)) << "row " << r << " drew masked token " << token;
    ++seen[at - std::begin(open)];
  }
  for (int i = 0; i < 3; ++i) EXPECT_GT(seen[i], 10) << "token " << open[i];
}

// A request's token depends on its seed and step, not on the batch it is drawn in.
TEST_P(Conformance, SampleIndependentOfBatch) {
  const int64_t V = 4099, B = 5, at = 3;
  auto batch = TestTensor::random({B, V}, dtype(), device(), rng(), -4, 4);
  const std::vector<double> row(batch.values().begin() + at * V, batch.values().begin() + (at + 1) * V);
  auto alone = TestTensor::of({1, V}, dtype(), device(), row);
  const ops::SampleParams params{0.9f, 0, 0.9f, 0.0f, 0, 0};
  for (int64_t step = 0; step < 20; ++step) {
    auto seeds = ints({B}, {11, 12, 13, 77, 15}, DType::i64);
    auto steps = ints({B}, {step, 3, step + 1, step, 0}, DType::i64);
    auto seed_alone = ints({1}, {77}, DType::i64);
    auto step_alone = ints({1}, {step}, DType::i64);
    auto tokens = ints({B}, std::vector<int64_t>(size_t(B), -7), DType::i64);
    auto token = ints({1}, {-7}, DType::i64);
    ops::sample(batch, tokens, params, {nullptr, nullptr, nullptr, nullptr, &seeds.view(), &steps.view()});
    ops::sample(alone, token, params, {nullptr, nullptr, nullptr, nullptr, &seed_alone.view(), &step_alone.view()});
    EXPECT_EQ(download_tokens(tokens)[size_t(at)], download_tokens(token)[0]) << "step " << step;
  }
}

}  // namespace
}  // namespace xhal::test

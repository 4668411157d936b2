// The CPU attention kernel is blocked (online softmax over key tiles): a 16k-token causal
// sequence runs in memory bounded by the tiles, not by S x S (which would be 1 GiB of f32 here).
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <random>

#include "golden/golden.hpp"
#include "xhal/xhal.hpp"

namespace xhal {
namespace {

long peak_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

TEST(CpuAttention, SixteenThousandTokensInBoundedMemory) {
  const int64_t S = 16384, H = 1, D = 16;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> q(size_t(S * H * D)), k(q.size()), v(q.size()), out(q.size(), NAN);
  for (auto* buf : {&q, &k, &v}) {
    for (auto& x : *buf) x = dist(rng);
  }
  DeviceManager::instance();  // plugins (and their vendor libraries) load before the measurement
  const long before = peak_rss_kib();
  ops::attention(TensorView(q.data(), DType::f32, {1, S, H, D}), TensorView(k.data(), DType::f32, {1, S, H, D}),
                 TensorView(v.data(), DType::f32, {1, S, H, D}), TensorView(out.data(), DType::f32, {1, S, H, D}),
                 {.causal = true});
  const long growth_mib = (peak_rss_kib() - before) / 1024;
  EXPECT_LT(growth_mib, 64) << "the S x S score matrix alone would be 1024 MiB";

  // The last 4 rows equal a bottom-right aligned problem with 4 queries over all keys.
  const int64_t rows = 4;
  std::vector<double> q_tail(q.end() - rows * D, q.end()), k_all(k.begin(), k.end()), v_all(v.begin(), v.end());
  auto expected = golden::attention(q_tail, k_all, v_all, 1, rows, S, H, H, D, D, {1.0 / std::sqrt(double(D)), true});
  for (int64_t i = 0; i < rows * D; ++i) {
    ASSERT_NEAR(out[size_t((S - rows) * D + i)], expected.out[size_t(i)], 1e-4) << i;
  }
}

}  // namespace
}  // namespace xhal

// sample's shared arithmetic (kernels/sampling.hpp): Philox4x32-10 against Random123's published
// known answers, the weights' exponential against std::exp, and the integer helpers' edges.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/sampling.hpp"

namespace xhal::kernels {
namespace {

TEST(SamplingMath, PhiloxKnownAnswers) {
  struct Kat {
    Philox128 counter;
    uint32_t k0, k1;
    Philox128 expected;
  };
  const Kat kats[] = {
      {{{0, 0, 0, 0}}, 0, 0, {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}}},
      {{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}},
       0xffffffffu,
       0xffffffffu,
       {{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}}},
      {{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}},
       0xa4093822u,
       0x299f31d0u,
       {{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}}},
  };
  for (const Kat& k : kats) {
    const Philox128 got = philox4x32_10(k.counter, k.k0, k.k1);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(got.w[i], k.expected.w[i]) << "word " << i;
  }
}

TEST(SamplingMath, ExpWithinTwoUlpsOfStdExp) {
  double worst = 0;
  for (int i = 0; i <= 320000; ++i) {
    const float d = -float(i) * 1e-4f;  // [-32, 0]
    const double exact = std::exp(double(d));
    const double got = sample_exp(d);
    if (exact < 0x1p-46) continue;
    worst = std::max(worst, std::abs(got - exact) / exact);
  }
  EXPECT_LT(worst, 2.5e-7);  // two units in the last place of a float
  EXPECT_EQ(sample_exp(0.0f), 1.0f);  // the largest logit weighs exactly 2^40
  EXPECT_EQ(sample_exp(-INFINITY), 0.0f);
  EXPECT_EQ(sample_exp(-40.0f), 0.0f);
  EXPECT_EQ(sample_weight(3.0f, 3.0f, 0.7f), uint64_t(1) << kSampleWeightBits);
}

TEST(SamplingMath, TopPTargetAndSettings) {
  EXPECT_EQ(top_p_target(0.5f, 10), 5u);
  EXPECT_EQ(top_p_target(0.51f, 10), 6u);  // ceil
  EXPECT_EQ(top_p_target(0.0f, 10), 1u);  // at least the largest token
  EXPECT_EQ(top_p_target(1.0f, UINT64_MAX), UINT64_MAX);
  // Every per-row value has a meaning: out-of-range ones read as the nearest setting.
  const float temperature[] = {0.0f, NAN, -1.0f, 2.0f};
  const int32_t top_k[] = {-3, 0, 100, 5};
  const float top_p[] = {NAN, 1.5f, 0.25f, 0.9f};
  const float min_p[] = {NAN, -1.0f, 2.0f, 0.5f};
  const int64_t seeds[] = {1, 2, 3, 4};
  SampleArgs args{
      {sizeof(xhal_sample_op_params), 1.0f, 0, 1.0f, 0.0f, 9, 9}, temperature, top_k, top_p, min_p, seeds, nullptr};
  for (int r = 0; r < 3; ++r) {
    EXPECT_TRUE(args.row(r, 100).greedy) << r;
    EXPECT_EQ(args.row(r, 100).top_k, 0) << r;  // <= 0 or >= V: off
  }
  const SampleRow last = args.row(3, 100);
  EXPECT_FALSE(last.greedy);
  EXPECT_EQ(last.top_k, 5);
  EXPECT_FLOAT_EQ(last.top_p, 0.9f);
  EXPECT_EQ(last.min_weight, uint64_t(1) << (kSampleWeightBits - 1));
  EXPECT_EQ(args.row(0, 100).top_p, 1.0f);  // NaN: off
  EXPECT_EQ(args.row(1, 100).top_p, 1.0f);
  EXPECT_EQ(args.row(0, 100).min_weight, 0u);
  EXPECT_EQ(args.row(2, 100).min_weight, uint64_t(1) << kSampleWeightBits);  // min_p above 1 is 1
  EXPECT_EQ(last.seed, 4u);
  EXPECT_EQ(last.step, 9u);
  EXPECT_EQ(last.stream, 0u);  // per-row seeds: the row's place in the batch does not count
  args.seeds = nullptr;
  EXPECT_EQ(args.row(3, 100).stream, 3u);
}

TEST(SamplingMath, DrawnPointWithinTheTotal) {
  SampleRow s{};
  for (uint64_t step = 0; step < 1000; ++step) {
    s.step = step;
    EXPECT_LT(sample_point(s, 7), 7u);
    EXPECT_EQ(sample_point(s, 1), 0u);
  }
}

}  // namespace
}  // namespace xhal::kernels

// The decode kernels' split-KV plan: pieces that cover the context in whole tiles, never shorter
// than the least worth a block, and grids that fill their last wave rather than spill into a
// nearly empty one.
#include <gtest/gtest.h>

#include <cstdint>

#include "kernels/split_kv_plan.hpp"

namespace xhal::kernels {
namespace {

constexpr int64_t kPlanTile = 64, kPlanMinKeys = 256;

// The fraction of its waves' slots a grid of `blocks` fills.
double wave_fill(int64_t blocks, int64_t slots) {
  const int64_t waves = (blocks + slots - 1) / slots;
  return double(blocks) / double(waves * slots);
}

void expect_covers(const SplitKvPlan& p, int64_t max_len) {
  EXPECT_GE(p.splits, 1);
  EXPECT_EQ(p.keys_per_split % kPlanTile, 0);
  EXPECT_GE(p.splits * p.keys_per_split, max_len);
  EXPECT_LT((p.splits - 1) * p.keys_per_split, max_len == 0 ? 1 : max_len) << "a piece with no keys";
}

TEST(SplitKvPlan, OneLongSequenceFillsOneWave) {
  // 8 kv heads of one 131072-key sequence on 132 multiprocessors holding 3 blocks each.
  const int64_t slots = 3 * 132, units = 8, len = 131072;
  const SplitKvPlan p = plan_split_kv(units, len, kPlanTile, kPlanMinKeys, slots);
  expect_covers(p, len);
  EXPECT_LE(units * p.splits, slots) << "a second, partial wave";
  EXPECT_GE(wave_fill(units * p.splits, slots), 0.95);
}

TEST(SplitKvPlan, ABatchPicksWholeWaves) {
  // 64 sequences x 8 kv heads = 512 blocks unsplit: 1.29 waves of 396; split so the waves fill.
  const int64_t slots = 3 * 132, units = 512, len = 4096;
  const SplitKvPlan p = plan_split_kv(units, len, kPlanTile, kPlanMinKeys, slots);
  expect_covers(p, len);
  EXPECT_GT(p.splits, 1);
  EXPECT_GE(wave_fill(units * p.splits, slots), 0.95);
}

TEST(SplitKvPlan, AGridOfWholeWavesIsNotSplit) {
  const SplitKvPlan p = plan_split_kv(512, 4096, kPlanTile, kPlanMinKeys, 256);  // exactly two waves
  EXPECT_EQ(p.splits, 1);
  EXPECT_EQ(p.keys_per_split, 4096);
}

TEST(SplitKvPlan, ShortContextsKeepTheLeastKeysAPiece) {
  for (const int64_t len : {int64_t(1), int64_t(63), int64_t(255), int64_t(256), int64_t(1000), int64_t(1024)}) {
    SCOPED_TRACE(testing::Message() << "max_len " << len);
    const SplitKvPlan p = plan_split_kv(8, len, kPlanTile, kPlanMinKeys, 396);
    expect_covers(p, len);
    EXPECT_LE(p.splits, len / kPlanMinKeys > 1 ? len / kPlanMinKeys : 1);
  }
}

TEST(SplitKvPlan, DegenerateInputsGiveOnePiece) {
  EXPECT_EQ(plan_split_kv(8, 0, kPlanTile, kPlanMinKeys, 396).splits, 1);
  EXPECT_EQ(plan_split_kv(0, 0, kPlanTile, kPlanMinKeys, 0).splits, 1);
  const SplitKvPlan p = plan_split_kv(1, 1 << 20, kPlanTile, kPlanMinKeys, 0);  // a failed occupancy query
  expect_covers(p, 1 << 20);
}

TEST(SplitKvPlan, VeryLongContextsStayBounded) {
  const int64_t len = int64_t(1) << 31;
  const SplitKvPlan p = plan_split_kv(1, len, kPlanTile, kPlanMinKeys, 100000);
  expect_covers(p, len);
  EXPECT_LE(p.splits, kMaxSplitKvPieces);
}

}  // namespace
}  // namespace xhal::kernels

// The decode kernels' split-KV plan: pieces that cover the context in whole tiles, never shorter
// than the least worth a block, and grids that fill their last wave rather than spill into a
// nearly empty one.
#include <gtest/gtest.h>

#include <algorithm>
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

// Every count from one to the most, each weighed as the plan weighs it; ties keep the fewer pieces.
int64_t exhaustive_splits(int64_t units, int64_t max_len, int64_t slots) {
  const int64_t tiles = (max_len + kPlanTile - 1) / kPlanTile;
  const int64_t most = std::clamp<int64_t>(max_len / kPlanMinKeys, 1, kMaxSplitKvPieces);
  int64_t best = 1, best_cost = INT64_MAX;
  for (int64_t s = 1; s <= most; ++s) {
    const int64_t waves = (units * s + slots - 1) / slots;
    const int64_t cost = waves * ((tiles + s - 1) / s + kSplitBlockOverheadTiles) + (s > 1 ? kSplitMergeTiles : 0);
    if (cost < best_cost) best = s, best_cost = cost;
  }
  return best;
}

TEST(SplitKvPlan, MatchesTheExhaustiveSearch) {
  int compared = 0;
  for (const int64_t units : {1, 3, 8, 32, 64, 512, 4096}) {
    for (const int64_t len : {0, 200, 1000, 4096, 5000, 65536, 131072, 1 << 20}) {
      for (const int64_t slots : {1, 132, 264, 396, 528}) {
        const int64_t most = std::clamp<int64_t>(len / kPlanMinKeys, 1, kMaxSplitKvPieces);
        if ((units * most + slots - 1) / slots > (units + slots - 1) / slots + 256) continue;  // the plan's cap
        SCOPED_TRACE(testing::Message() << "units " << units << " max_len " << len << " slots " << slots);
        const SplitKvPlan p = plan_split_kv(units, len, kPlanTile, kPlanMinKeys, slots);
        const int64_t s = exhaustive_splits(units, len, slots);
        const int64_t keys = (len + s - 1) / s, per = (keys + kPlanTile - 1) / kPlanTile * kPlanTile;
        EXPECT_EQ(p.keys_per_split, per);
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 200);
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

// The attention kernels' tile table: a row for every head dim each family's dispatch
// instantiates (a missing row would instantiate a tile of zeros), tiles the tensor-core shapes
// divide, and an origin for each choice.
#include <gtest/gtest.h>

#include <cstring>
#include <initializer_list>

#include "kernels/gpu/attention_tiles.hpp"

namespace xhal::gpu::attention_tiles {
namespace {

template <int N>
void expect_rows(const Row (&rows)[N], std::initializer_list<int> head_dims, const char* family) {
  SCOPED_TRACE(family);
  for (const int D : head_dims) {
    const Row r = find(rows, D);
    EXPECT_EQ(r.head_dim, D) << "no row for head dim " << D;
    EXPECT_GT(r.block_m, 0);
    EXPECT_EQ(r.block_m % 16, 0) << "head dim " << D;
    EXPECT_GT(r.block_n, 0);
    EXPECT_EQ(r.block_n % 16, 0) << "head dim " << D;
    EXPECT_GT(std::strlen(r.origin), 10u) << "head dim " << D << ": say what the choice rests on";
  }
  EXPECT_EQ(find(rows, 48).head_dim, 0) << "a head dim no row names";
}

TEST(AttentionTiles, EveryDispatchedHeadDimHasARow) {
  expect_rows(kMmaForward, {64, 80, 96, 128, 256}, "mma.sync forward");
  expect_rows(kWgmmaForward, {64, 128, 256}, "wgmma forward");
  expect_rows(kMmaBackward, {64, 128}, "mma.sync backward");
  expect_rows(kWgmmaBackward, {64, 128}, "wgmma backward");
}

TEST(AttentionTiles, FamiliesKeepTheirFixedDimensions) {
  for (const Row& r : kWgmmaForward) EXPECT_EQ(r.block_m, 128) << "two consumer warpgroups of 64 rows";
  for (const Row& r : kWgmmaBackward) EXPECT_EQ(r.block_n, 128) << "two consumer warpgroups of 64 keys";
  for (const Row& r : kMmaForward) EXPECT_EQ(r.block_m, 64 * r.extra) << "four warps of 16 rows a row tile";
  for (const Row& r : kMmaBackward) EXPECT_EQ(r.block_n, 16 * r.extra) << "16 keys a warp";
}

}  // namespace
}  // namespace xhal::gpu::attention_tiles

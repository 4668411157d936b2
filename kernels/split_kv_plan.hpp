// How many pieces a decode kernel cuts each sequence's keys into (flash-decoding's split-KV), chosen
// from the problem and from how many blocks the device holds at once. Blocks of equal length run a
// wave at a time, so a grid of 1.3 waves costs two: the plan weighs each split count by its waves
// times a block's length, which picks a grid that fills its last wave (one long sequence: one full
// wave of pieces; a batch: the split count whose waves come out whole) instead of a fixed number
// of blocks a multiprocessor. Host code, shared by the GPU backends and tested on the CPU.
#pragma once

#include <algorithm>
#include <cstdint>

namespace xhal::kernels {

struct SplitKvPlan {
  int64_t splits;  // pieces of each sequence's keys, at least one
  int64_t keys_per_split;  // a multiple of the tile; splits x keys_per_split covers the context
};

// The most pieces a sequence is cut into (the merge kernel keeps a weight for each in shared
// memory); past it the merge's partial rows outweigh any wave's tail anyway.
inline constexpr int64_t kMaxSplitKvPieces = 4096;
// A block's cost beyond its tiles, in tiles: its first tile's load, which nothing hides, and its
// end (the warps' results merged through shared memory, the partial row written).
inline constexpr int64_t kSplitBlockOverheadTiles = 2;
// The merge kernel that splitting adds, in tiles of one block.
inline constexpr int64_t kSplitMergeTiles = 1;

inline constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// units: blocks one split launches (sequences x kv heads); max_len: the longest context the block
// table can address, in keys; tile: keys a block takes a step; min_keys: the fewest keys worth a
// block of their own; slots: blocks of the kernel the device holds at once (at least one).
// Within one number of waves more pieces never cost more, so the candidates are the most pieces
// that fit each number of waves (a few dozen of them, not every count: the plan runs on the host
// for every decode call), each brought down to the fewest pieces with the same tiles a block.
inline SplitKvPlan plan_split_kv(int64_t units, int64_t max_len, int64_t tile, int64_t min_keys, int64_t slots) {
  units = std::max<int64_t>(units, 1), slots = std::max<int64_t>(slots, 1), tile = std::max<int64_t>(tile, 1);
  max_len = std::max<int64_t>(max_len, 0);
  const int64_t tiles = ceil_div(max_len, tile);
  const int64_t most = std::clamp<int64_t>(max_len / std::max<int64_t>(min_keys, 1), 1, kMaxSplitKvPieces);
  const auto waves = [&](int64_t s) { return ceil_div(units * s, slots); };
  const auto cost = [&](int64_t s) {
    return waves(s) * (ceil_div(tiles, s) + kSplitBlockOverheadTiles) + (s > 1 ? kSplitMergeTiles : 0);
  };
  int64_t best = 1, best_cost = cost(1);
  // Past 256 more waves than one piece makes, a wave's tail is under half a percent of the time.
  const int64_t last_waves = std::min(waves(most), waves(1) + 256);
  for (int64_t w = waves(1); w <= last_waves; ++w) {
    int64_t s = std::min(most, w * slots / units);
    if (s < 1) continue;
    if (tiles > 0) s = ceil_div(tiles, ceil_div(tiles, s));  // the fewest pieces of as many tiles
    const int64_t c = cost(s);
    if (c < best_cost || (c == best_cost && s < best)) best = s, best_cost = c;
  }
  const int64_t keys_per_split = ceil_div(ceil_div(max_len, best), tile) * tile;
  const int64_t splits = keys_per_split == 0 ? 1 : std::max<int64_t>(1, ceil_div(max_len, keys_per_split));
  return {splits, keys_per_split};
}

}  // namespace xhal::kernels

// The tile each attention kernel runs for each head dim, in one table: the fixed choice that an
// autotuner replaces, in one place, by picking among compiled rows per shape bucket. Each family's
// dispatch instantiates the tile of its row and nothing else, and each row records what its choice
// rests on (the measurements themselves: docs/journal/kernel-notes.md). The split-KV decode
// kernels size their grids from the problem instead (kernels/split_kv_plan.hpp).
#pragma once

namespace xhal::gpu::attention_tiles {

// A row: the head dim; a block's query rows and keys; for the mma.sync kernels their row tiles a
// warp (forward) or warps a block (backward), else 0.
struct Row {
  int head_dim, block_m, block_n, extra;
  const char* origin;
};

// The row of `head_dim` (a row of zeros where the family has none: no tile instantiates it).
template <int N>
constexpr Row find(const Row (&rows)[N], int head_dim) {
  for (const Row& r : rows) {
    if (r.head_dim == head_dim) return r;
  }
  return Row{0, 0, 0, 0, "none"};
}

// The mma.sync forward kernel (flash_attention.cuh), every NVIDIA GPU from sm_80.
inline constexpr Row kMmaForward[] = {
    {64, 128, 64, 2, "two row tiles a warp halve the K/V traffic a row (flash v2); 64 keys a tile"},
    {80, 128, 64, 2, "the D 64 tile; not measured on its own"},
    {96, 128, 32, 2, "the D 128 tile (two row tiles a warp, 32 keys); not measured on its own"},
    {128, 128, 32, 2,
     "two row tiles a warp, 32 keys a tile (flash v2); a sweep of five tile shapes in one run came within 10% "
     "(188-204 TFLOP/s causal): the shape is not this kernel's limit"},
    {256, 64, 32, 1, "one row tile a warp: two would not fit the registers"},
};

// The Hopper forward kernel (flash_attention_sm90.cuh): 128 query rows, two consumer warpgroups.
inline constexpr Row kWgmmaForward[] = {
    {64, 128, 128, 0, "the D 128 tile; not measured on its own"},
    {128, 128, 128, 0,
     "128 keys a tile, two stages (v8, warp-specialised: 387-405 / 422-448 TFLOP/s causal / full against 320 / 355 for "
     "64-key tiles with two blocks a multiprocessor before it)"},
    {256, 128, 64, 0,
     "64 keys a tile: O (128 registers a thread) and the scores fit the consumers' registers, Q and two stages of K "
     "and V fit 193 KB of shared memory; 660 TFLOP/s full, 0.95x cuDNN (2026-11-28, H200)"},
};

// The mma.sync backward kernel (attention_backward_mma.cu): 8 warps, 128 keys a block.
inline constexpr Row kMmaBackward[] = {
    {64, 64, 128, 8, "the D 128 tile; not measured on its own"},
    {128, 64, 128, 8,
     "8 warps and 128 keys a block: twice the warps a multiprocessor and half the dQ atomics of 4 warps and 64 keys "
     "(137 / 153 TFLOP/s causal / full, from 133 / 142; 2026-11-26, H200)"},
};

// The Hopper backward kernel (attention_backward_sm90.cu): 128 keys a block, two consumer warpgroups.
inline constexpr Row kWgmmaBackward[] = {
    {64, 128, 128, 0,
     "128 query rows a tile: half the steps and barriers of 64, each wgmma still 64 rows; 1.13-1.16x faster "
     "(2026-11-27, H200)"},
    {128, 64, 128, 0, "64 query rows a tile: rows x D = 8192 keeps a consumer's accumulators in its registers"},
};

}  // namespace xhal::gpu::attention_tiles

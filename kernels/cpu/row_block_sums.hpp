// Sums over rows that do not depend on the thread count: the rows go in a fixed number of blocks
// (a function of the row count alone), each block adds its rows' terms in order into its own f32
// row of partial sums, and the partial rows are added in block order. Used for weight gradients
// (rms_norm_backward's dweight), so that they have the same bits run to run.
#pragma once

#include <algorithm>
#include <cstdint>

#include "element.hpp"
#include "scratch.hpp"

namespace xhal::cpu {

class RowBlockSums {
 public:
  // Enough blocks to keep every core of a large CPU busy; few enough that their rows of partial
  // sums stay small next to the tensors.
  static constexpr int64_t kMaxBlocks = 128;

  // Partial rows of `cols` floats for `rows` rows; empty (ok() false) when the allocator refused.
  RowBlockSums(const xhal_op_call* c, int64_t rows, int64_t cols)
      : rows_(rows),
        cols_(cols),
        blocks_(std::min(rows, kMaxBlocks)),
        rows_per_block_(blocks_ == 0 ? 0 : (rows + blocks_ - 1) / blocks_),
        partials_(c, checked_bytes(std::max<int64_t>(blocks_, 1), checked_bytes(cols, sizeof(float)))) {}

  bool ok() const { return partials_.data() != nullptr; }
  int64_t blocks() const { return blocks_; }
  int64_t first_row(int64_t block) const { return block * rows_per_block_; }
  int64_t end_row(int64_t block) const { return std::min(rows_, (block + 1) * rows_per_block_); }
  // Block b's partial row, zeroed.
  float* start(int64_t block) const {
    float* row = partials_.get() + block * cols_;
    std::fill(row, row + cols_, 0.0f);
    return row;
  }
  // out[i * stride] = the sum of the partial rows' column i, in block order. Called by every
  // thread of a parallel region (the columns are shared among them).
  template <class E>
  void add_into(typename E::Storage* out, int64_t stride) const {
#pragma omp for schedule(static)
    for (int64_t i = 0; i < cols_; ++i) {
      float sum = 0.0f;
      for (int64_t b = 0; b < blocks_; ++b) sum += partials_.get()[b * cols_ + i];
      out[i * stride] = E::store(sum);
    }
  }

 private:
  int64_t rows_, cols_, blocks_, rows_per_block_;
  Scratch partials_;
};

}  // namespace xhal::cpu

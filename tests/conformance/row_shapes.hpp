// The row shapes the conformance tests of the row-wise ops (norms, activations and their
// gradients) run over.
#pragma once

#include <cstdint>
#include <vector>

#include "test_tensor.hpp"

namespace xhal::test {

struct RowShape {
  std::vector<int64_t> shape;  // [..., N]
  Layout layout;
};

// Odd sizes, rank 3, an empty batch, a padded (strided) layout, and rows long enough for each
// GPU kernel shape (one warp, two and four warps per row, rows past the registers).
inline const std::vector<RowShape> kRowShapes = {
    {{1, 1}, {}},
    {{7, 129}, {}},
    {{129, 1000}, {}},
    {{3, 5, 64}, {}},
    {{0, 64}, {}},
    {{33, 96}, {{}, 5}},
    {{2, 7, 80}, {{1, 0, 2}, 3}},
    {{9, 2056}, {}},
    {{5, 4096}, {}},
    {{3, 8200}, {}},
    {{2, 20000}, {}},
};

}  // namespace xhal::test

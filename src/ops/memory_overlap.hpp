// Whether two tensors' memory may overlap, for the op front ends' check that an output does not
// alias an input (or another output) in a way no kernel can honour. Views must have passed
// ArgChecks::tensor (their byte extents fit in 64 bits).
#pragma once

#include "xhal/tensor_view.hpp"

namespace xhal::ops {

// False when no byte of `a` can be a byte of `b`: empty, on different devices, apart address
// ranges, or rows interleaved in one buffer without sharing bytes (q and k as views of one packed
// qkv tensor, [T, H, D] or [B, S, H, D]: each token's bytes at distinct offsets within one row
// stride). True otherwise, conservatively.
bool may_overlap(const TensorView& a, const TensorView& b);

// The same memory described the same way (data, dtype, shape, strides): an element-wise op can
// write its output over such an input.
bool same_view(const TensorView& a, const TensorView& b);

}  // namespace xhal::ops

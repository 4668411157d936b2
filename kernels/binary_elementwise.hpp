// The element-wise binary ops' formulas (add, mul), shared by the CPU and GPU kernels: f32 from the
// two inputs, rounded once into out. y is x's shape or one row broadcast over x's rows.
#pragma once

#include "kernels/kernel_registration.hpp"
#include "xhal/op_table.h"

namespace xhal::kernels {

struct Sum {
  XHAL_HOST_DEVICE static float apply(float x, float y) { return x + y; }
};
struct Product {
  XHAL_HOST_DEVICE static float apply(float x, float y) { return x * y; }
};

// Calls f(Op{}) with the formula of the call's op.
template <class F>
inline void with_binary_op(const xhal_op_call* c, F&& f) {
  if (c->op == XHAL_OP_ADD) {
    f(Sum{});
  } else {
    f(Product{});
  }
}

inline const char* binary_op_name(const xhal_op_call* c) { return c->op == XHAL_OP_ADD ? "add" : "mul"; }

}  // namespace xhal::kernels

// The one tolerance table of the conformance suite: |got - exact| <= atol + rtol * |exact|, with
// `exact` computed in float64 from the same (rounded) inputs. Kernels accumulate in f32, so f32 is
// bounded by summation order and f16/bf16 mostly by the rounding of the output.
#pragma once

#include "xhal/dtype.hpp"

namespace xhal::test {

struct Tolerance {
  double atol, rtol;
};

constexpr Tolerance tolerance_for(DType dtype) {
  switch (dtype) {
    case DType::f32: return {1e-4, 1e-4};
    case DType::f16: return {2e-3, 2e-3};
    case DType::bf16: return {1.6e-2, 1.6e-2};
    default: return {0, 0};
  }
}

}  // namespace xhal::test

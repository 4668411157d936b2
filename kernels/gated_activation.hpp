// The gated activations' scalar formulas, shared by the CPU reference and GPU kernels: swiglu's
// silu and gelu_and_mul's gelu (exact, through erf, or the tanh approximation). The CPU's SIMD
// kernel computes the same in vectors. Non-finite gates give what the formulas give: +inf gives
// +inf times up, -inf gives NaN (-inf times 0), as in PyTorch.
#pragma once

#include <math.h>
#include <stdint.h>

#include "kernels/kernel_registration.hpp"
#include "xhal/op_table.h"

namespace xhal::kernels {

struct Silu {
  XHAL_HOST_DEVICE static float apply(float x) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
    return x / (1.0f + __expf(-x));  // the fast exponential: far inside f32's tolerance
#else
    return x / (1.0f + expf(-x));
#endif
  }
};

// erfc(z) for z >= 0 as t e^(-z^2 + P(t)), t = 1 / (1 + z / 2), P of degree 9: the Chebyshev fit of
// Press et al.'s Numerical Recipes (erfcc), fractional error under 1.2e-7 for every z >= 0. The
// GPU kernels take it with the fast exponential and division (erfcf cost 30% of the copy rate on
// an H200); the CPU's SIMD kernel computes it in vectors.
XHAL_HOST_DEVICE inline float erfc_of_nonnegative(float z) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  const float t = __fdividef(1.0f, fmaf(0.5f, z, 1.0f));
#else
  const float t = 1.0f / fmaf(0.5f, z, 1.0f);
#endif
  float p = 0.17087277f;
  p = fmaf(p, t, -0.82215223f);
  p = fmaf(p, t, 1.48851587f);
  p = fmaf(p, t, -1.13520398f);
  p = fmaf(p, t, 0.27886807f);
  p = fmaf(p, t, -0.18628806f);
  p = fmaf(p, t, 0.09678418f);
  p = fmaf(p, t, 0.37409196f);
  p = fmaf(p, t, 1.00002368f);
  p = fmaf(p, t, -1.26551223f);
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return t * __expf(fmaf(-z, z, p));
#else
  return t * expf(fmaf(-z, z, p));
#endif
}

struct GeluErf {
  // x/2 (1 + erf(x / sqrt 2)) as x/2 erfc(-x / sqrt 2), so that it does not cancel for negative x:
  // libm's erfcf on the CPU, erfc_of_nonnegative on GPUs.
  XHAL_HOST_DEVICE static float apply(float x) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
    const float z = fminf(fabsf(x) * 0.70710678118654752f, 10.0f);  // erfc(10) / 2 = 1e-45: 0 in f32
    const float q = 0.5f * erfc_of_nonnegative(z);  // Phi(-|x|)
    return x != -INFINITY ? x * (x >= 0.0f ? 1.0f - q : q) : NAN;
#else
    return 0.5f * x * erfcf(x * -0.70710678118654752f);
#endif
  }
};

struct GeluTanh {
  // (1 + tanh z) / 2 as the sigmoid of 2 z: gelu stays nonzero where tanh z rounds to -1 (z below
  // -9), so a finite gate times an infinite up is an infinity, as in float64.
  XHAL_HOST_DEVICE static float apply(float x) {
    const float two_z = 1.59576912160573071f * (x + 0.044715f * x * x * x);  // 2 sqrt(2/pi) (x + 0.044715 x^3)
    return x / (1.0f + expf(-two_z));
  }
};

// act(gate) up: the gated ops' element-wise formula from their activation.
template <class Act>
struct Gated {
  XHAL_HOST_DEVICE static float apply(float gate, float up) { return Act::apply(gate) * up; }
};

// Calls f(Act{}) with the activation an op's call asks for: swiglu's silu, or gelu_and_mul's
// gelu by its parameters.
template <class F>
inline void with_gated_activation(const xhal_op_call* c, F&& f) {
  if (c->op == XHAL_OP_SWIGLU || c->op == XHAL_OP_SWIGLU_PACKED) {
    f(Silu{});
  } else if (op_params<xhal_gelu_op_params>(c).approximation == XHAL_GELU_TANH) {
    f(GeluTanh{});
  } else {
    f(GeluErf{});
  }
}

// Whether an op's gate and up are the halves of one row (the _packed ops).
inline bool gated_packed(const xhal_op_call* c) {
  return c->op == XHAL_OP_SWIGLU_PACKED || c->op == XHAL_OP_GELU_AND_MUL_PACKED;
}

// The op's name, for messages.
inline const char* gated_op_name(const xhal_op_call* c) {
  switch (c->op) {
    case XHAL_OP_SWIGLU: return "swiglu";
    case XHAL_OP_SWIGLU_PACKED: return "swiglu_packed";
    case XHAL_OP_GELU_AND_MUL: return "gelu_and_mul";
    default: return "gelu_and_mul_packed";
  }
}

}  // namespace xhal::kernels

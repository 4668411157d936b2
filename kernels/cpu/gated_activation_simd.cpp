// The gated activations with SIMD (Highway, best target picked at run time): swiglu and
// gelu_and_mul, rows in parallel, one pass. The exponentials of simd_math-inl.h, 2^f by a
// polynomial of degree 5 for f32 (relative error 2e-7), 4 for f16 (4e-6) and 3 for bf16 (1e-4;
// its own rounding errs by up to 2e-3). Registered above the reference kernels of
// gated_activation.cpp.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/gated_activation_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <limits>

#include "kernels/cpu/kernel_registration.hpp"
#include "kernels/cpu/simd_element-inl.h"
#include "kernels/cpu/simd_math-inl.h"
#include "kernels/cpu/tensor_ref.hpp"
#include "kernels/gated_activation.hpp"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {

// v[k] = act(g[k]) u[k] for k < kN, each activation's kN chains advanced together. Act: the scalar
// formula (kernels/gated_activation.hpp) the row's tail uses.
template <class Act>
struct VectorActivation;

// A gate of -inf gives NaN, as the scalar formulas do (-inf times 0); the clamped exponentials
// (times_sigmoid's, erfc's) would give -inf times up. The NaN is 0x7FC00000, whose low 16 bits
// are zero as NaNs::from_bf16 requires.
HWY_INLINE VF nan_where_minus_inf(VF v, VF g) {
  const DF df;
  const VF nan = hn::Set(df, std::numeric_limits<float>::quiet_NaN());
  return hn::IfThenElse(hn::Eq(g, hn::Set(df, -std::numeric_limits<float>::infinity())), nan, v);
}

// silu(g) u = g u sigmoid(g).
template <>
struct VectorActivation<kernels::Silu> {
  template <int kN, int kDegree, bool kRefine>
  static HWY_INLINE void times(VF (&v)[kN], const VF (&g)[kN], const VF (&u)[kN]) {
    VF gu[kN];
    for (int k = 0; k < kN; ++k) gu[k] = hn::Mul(g[k], u[k]);
    times_sigmoid<kN, kDegree, kRefine>(v, g, gu);
    for (int k = 0; k < kN; ++k) v[k] = nan_where_minus_inf(v[k], g[k]);
  }
};

// (1 + tanh z) / 2 = sigmoid(2 z): gelu_tanh(g) u = g u sigmoid(2 sqrt(2/pi) (g + 0.044715 g^3)).
template <>
struct VectorActivation<kernels::GeluTanh> {
  template <int kN, int kDegree, bool kRefine>
  static HWY_INLINE void times(VF (&v)[kN], const VF (&g)[kN], const VF (&u)[kN]) {
    const DF df;
    const auto a = hn::Set(df, 1.59576912160573071f),
               b = hn::Set(df, 0.0713548162726008f);  // 2 sqrt(2/pi) (1, 0.044715)
    VF y[kN], gu[kN];
    for (int k = 0; k < kN; ++k) y[k] = hn::Mul(g[k], hn::MulAdd(hn::Mul(g[k], g[k]), b, a));
    for (int k = 0; k < kN; ++k) gu[k] = hn::Mul(g[k], u[k]);
    times_sigmoid<kN, kDegree, kRefine>(v, y, gu);
    for (int k = 0; k < kN; ++k) v[k] = nan_where_minus_inf(v[k], g[k]);
  }
};

// gelu(g) u = g u Phi(g), the normal distribution's Phi(g) = erfc(-g / sqrt 2) / 2. With z = |g| /
// sqrt 2, q = erfc(z) / 2 = Phi(-|g|), and Phi(g) is 1 - q for g >= 0, q below. erfc(z) = t
// e^(-z^2 + P(t)), t = 1 / (1 + z / 2), P of degree 9: the Chebyshev fit of Press et al.'s
// Numerical Recipes (erfcc), fractional error under 1.2e-7 for every z >= 0, so q keeps its relative
// accuracy far into the tail, where 1 + erf would cancel.
template <>
struct VectorActivation<kernels::GeluErf> {
  template <int kN, int kDegree, bool kRefine>
  static HWY_INLINE void times(VF (&v)[kN], const VF (&g)[kN], const VF (&u)[kN]) {
    const DF df;
    static constexpr float kP[10] = {-1.26551223f, 1.00002368f,  0.37409196f, 0.09678418f,  -0.18628806f,
                                     0.27886807f,  -1.13520398f, 1.48851587f, -0.82215223f, 0.17087277f};
    const auto half = hn::Set(df, 0.5f), one = hn::Set(df, 1.0f), lo = hn::Set(df, -87.0f);
    VF z[kN], t[kN], arg[kN], e[kN];
    // z at most 10 (erfc(10) / 2 = 1e-45, 0 in f32): t stays finite for infinite gates.
    const auto z_max = hn::Set(df, 10.0f);
    for (int k = 0; k < kN; ++k) z[k] = hn::Min(hn::Mul(hn::Abs(g[k]), hn::Set(df, 0.70710678118654752f)), z_max);
    for (int k = 0; k < kN; ++k) {
      const VF d = hn::MulAdd(z[k], half, one);  // 1 + z / 2, at least 1
      const VF r = hn::ApproximateReciprocal(d);
      t[k] = hn::Mul(r, hn::NegMulAdd(d, r, hn::Set(df, 2.0f)));  // one Newton step: P(t) needs t to 2^-24
    }
    for (int k = 0; k < kN; ++k) arg[k] = hn::MulAdd(t[k], hn::Set(df, kP[9]), hn::Set(df, kP[8]));
    for (int j = 7; j >= 0; --j) {
      for (int k = 0; k < kN; ++k) arg[k] = hn::MulAdd(arg[k], t[k], hn::Set(df, kP[j]));
    }
    for (int k = 0; k < kN; ++k) arg[k] = hn::Max(hn::NegMulAdd(z[k], z[k], arg[k]), lo);  // -z^2 + P(t)
    exp2_of_products<kDegree>(e, arg, hn::Set(df, 1.44269504088896341f));
    for (int k = 0; k < kN; ++k) {
      const VF q = hn::Mul(hn::Mul(half, t[k]), e[k]);
      const VF phi = hn::IfThenElse(hn::Ge(g[k], hn::Zero(df)), hn::Sub(one, q), q);
      v[k] = nan_where_minus_inf(hn::Mul(hn::Mul(g[k], u[k]), phi), g[k]);  // q's exponential is clamped too
    }
  }
};

// One row, four vectors at a time (two pairs, their chains advanced together). Packed rows read
// their two halves as two streams 16 KiB apart: staging the activation in f32 first, to read the
// row as one stream, was no faster on Zen 3 and 10% slower on a 16-core Xeon (for swiglu). Every
// value is computed from the row's own elements, so bf16 is rounded without a NaN test
// (NaNs::from_bf16).
template <class E, class Act, bool kStream>
void gated_row(const typename E::Storage* gate, const typename E::Storage* up, typename E::Storage* out, int64_t n) {
  using S = typename E::Storage;
  using V = VectorActivation<Act>;
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df));
  constexpr bool kF32 = E::kDType == XHAL_DTYPE_F32;
  constexpr int kDegree = kF32 ? 5 : E::kDType == XHAL_DTYPE_F16 ? 4 : 3;  // errors 2e-7, 4e-6, 1e-4
  const int64_t quads = n / (4 * lanes) * (4 * lanes);  // elements in whole groups of four vectors
  // The four vectors at p (two pairs).
  auto load4 = [&](const S* p, VF(&v)[4]) { load2_f32<E>(p, v[0], v[1]), load2_f32<E>(p + 2 * lanes, v[2], v[3]); };
  int64_t i = 0;
  for (; i < quads; i += 4 * lanes) {
    VF g[4], u[4], a[4];
    load4(gate + i, g), load4(up + i, u);
    V::template times<4, kDegree, kF32>(a, g, u);
    store2_f32<E, kStream, NaNs::from_bf16>(a[0], a[1], out + i);
    store2_f32<E, kStream, NaNs::from_bf16>(a[2], a[3], out + i + 2 * lanes);
  }
  for (; i + lanes <= n; i += lanes) {
    VF a[1];
    const VF g[1] = {load_f32<E>(gate + i)}, u[1] = {load_f32<E>(up + i)};
    V::template times<1, kDegree, kF32>(a, g, u);
    store_f32<E, kStream, NaNs::from_bf16>(a[0], out + i);
  }
  for (; i < n; ++i) out[i] = E::store(Act::apply(E::load(gate[i])) * E::load(up[i]));
}

template <class E, class Act>
void gated_rows_typed(const xhal_op_call* c) {
  using S = typename E::Storage;
  const bool packed = kernels::gated_packed(c);
  const TensorRef<const S> gate(c->tensors[XHAL_SWIGLU_GATE]);
  const TensorRef<const S> up(packed ? c->tensors[XHAL_SWIGLU_GATE] : c->tensors[XHAL_SWIGLU_UP]);
  const TensorRef<S> out(c->tensors[XHAL_SWIGLU_OUT]);
  const int64_t n = out.size(-1), rows = out.rows(), up_offset = packed ? n : 0;
  const auto row = should_stream<E>(c->tensors[XHAL_SWIGLU_OUT]) ? gated_row<E, Act, true> : gated_row<E, Act, false>;
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) row(gate.row(r), up.row(r) + up_offset, out.row(r), n);
    stream_fence();
  }
}

void gated_rows(const xhal_op_call* c) {
  kernels::with_gated_activation(c, [&](auto act) {
    using Act = decltype(act);
    with_element(c->dtype, [&]<class E>() { gated_rows_typed<E, Act>(c); });
  });
}

}  // namespace xhal::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace xhal::cpu {

HWY_EXPORT(gated_rows);

namespace {
template <class E>
struct GatedActivationSimd {
  static xhal_status run(const xhal_op_call* c, char*, size_t) {
    HWY_DYNAMIC_DISPATCH(gated_rows)(c);
    return XHAL_OK;
  }
};
}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_fast_kernels<GatedActivationSimd>(host, "cpu.swiglu_simd", XHAL_OP_SWIGLU);
  register_fast_kernels<GatedActivationSimd>(host, "cpu.swiglu_packed_simd", XHAL_OP_SWIGLU_PACKED);
  register_fast_kernels<GatedActivationSimd>(host, "cpu.gelu_and_mul_simd", XHAL_OP_GELU_AND_MUL);
  register_fast_kernels<GatedActivationSimd>(host, "cpu.gelu_and_mul_packed_simd", XHAL_OP_GELU_AND_MUL_PACKED);
}

}  // namespace xhal::cpu
#endif

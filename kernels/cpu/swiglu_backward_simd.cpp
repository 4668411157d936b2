// swiglu_backward and swiglu_packed_backward with SIMD (Highway, best target picked at run time):
// rows in parallel, one pass, two vectors at a time. s = sigmoid(gate) from simd_math-inl.h's
// 2^f (degree 5 for f32, 4 for f16, 3 for bf16) and the hardware reciprocal estimate (refined once
// for f32 and f16); dup = dout gate s, dgate = dout up s (1 + gate e s), e = e^-gate (e s = 1 - s). Every input of a pair
// of vectors is loaded before its gradients are stored, so gradients may overwrite their inputs.
// Registered above the portable reference kernels of swiglu_backward.cpp.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/swiglu_backward_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <cmath>

#include "kernels/cpu/kernel_registration.hpp"
#include "kernels/cpu/simd_element-inl.h"
#include "kernels/cpu/simd_math-inl.h"
#include "kernels/cpu/tensor_ref.hpp"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {

// g clamped to [-87, 87] for the exponential (as times_sigmoid does); the products use g itself, so
// a NaN gate stays NaN in both gradients.
template <class E, bool kStream>
void swiglu_backward_row(const typename E::Storage* dout, const typename E::Storage* gate,
                         const typename E::Storage* up, typename E::Storage* dgate, typename E::Storage* dup,
                         int64_t n) {
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df));
  constexpr bool kF32 = E::kDType == XHAL_DTYPE_F32;
  constexpr int kDegree = kF32 ? 5 : E::kDType == XHAL_DTYPE_F16 ? 4 : 3;
  const auto lo = hn::Set(df, -87.0f), hi = hn::Set(df, 87.0f), minus_log2e = hn::Set(df, -1.44269504088896341f);
  const auto one = hn::Set(df, 1.0f), two = hn::Set(df, 2.0f), inf = hn::Set(df, INFINITY);
  int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    VF d[2], g[2], u[2], e[2], clamped[2];
    load2_f32<E>(dout + i, d[0], d[1]), load2_f32<E>(gate + i, g[0], g[1]), load2_f32<E>(up + i, u[0], u[1]);
    for (int k = 0; k < 2; ++k) clamped[k] = hn::Min(hn::Max(g[k], lo), hi);
    exp2_of_products<kDegree>(e, clamped, minus_log2e);
    VF dg[2], du[2];
    for (int k = 0; k < 2; ++k) {
      // e^-g exactly 0 or inf at g = +-inf (as the formula has it, so that 0 * inf gives its NaNs).
      e[k] = hn::IfThenElse(hn::IsInf(g[k]), hn::IfThenZeroElse(hn::Gt(g[k], hn::Zero(df)), inf), e[k]);
      const VF den = hn::Add(e[k], one);
      VF s = hn::ApproximateReciprocal(den);
      if constexpr (E::kDType != XHAL_DTYPE_BF16) s = hn::Mul(s, hn::NegMulAdd(den, s, two));
      const VF ds = hn::Mul(d[k], s);
      du[k] = hn::Mul(ds, g[k]);
      // 1 - s = e s: exact where 1 - s would cancel (large g).
      dg[k] = hn::Mul(hn::Mul(ds, u[k]), hn::MulAdd(g[k], hn::Mul(e[k], s), one));
    }
    store2_f32<E, kStream, NaNs::from_bf16>(dg[0], dg[1], dgate + i);
    store2_f32<E, kStream, NaNs::from_bf16>(du[0], du[1], dup + i);
  }
  for (; i < n; ++i) {
    const float dv = E::load(dout[i]), gv = E::load(gate[i]), uv = E::load(up[i]);
    const float s = 1.0f / (1.0f + std::exp(-gv));
    dgate[i] = E::store(dv * uv * s * (1.0f + gv * (1.0f - s)));
    dup[i] = E::store(dv * gv * s);
  }
}

// packed: gate and up are the halves of x's rows, dgate and dup those of dx's.
template <class E>
void swiglu_backward_rows_typed(const xhal_op_call* c, bool packed) {
  using S = typename E::Storage;
  const TensorRef<const S> dout(c->tensors[XHAL_SWIGLU_BACKWARD_DOUT]), gate(c->tensors[XHAL_SWIGLU_BACKWARD_GATE]);
  const TensorRef<const S> up(packed ? c->tensors[XHAL_SWIGLU_BACKWARD_GATE] : c->tensors[XHAL_SWIGLU_BACKWARD_UP]);
  const TensorRef<S> dgate(c->tensors[XHAL_SWIGLU_BACKWARD_DGATE]);
  const TensorRef<S> dup(packed ? c->tensors[XHAL_SWIGLU_BACKWARD_DGATE] : c->tensors[XHAL_SWIGLU_BACKWARD_DUP]);
  const int64_t n = dout.size(-1), rows = dout.rows(), half = packed ? n : 0;
  // Streaming stores need every row start of both outputs aligned (the packed op's second half too).
  bool stream = should_stream<E>(c->tensors[XHAL_SWIGLU_BACKWARD_DGATE]);
  if (packed) {
    stream = stream && (n * int64_t(sizeof(S))) % int64_t(stream_alignment<E>()) == 0;
  } else {
    stream = stream && should_stream<E>(c->tensors[XHAL_SWIGLU_BACKWARD_DUP]);
  }
  const auto row = stream ? swiglu_backward_row<E, true> : swiglu_backward_row<E, false>;
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      row(dout.row(r), gate.row(r), up.row(r) + half, dgate.row(r), dup.row(r) + half, n);
    }
    stream_fence();
  }
}

void swiglu_backward_rows(const xhal_op_call* c) {
  const bool packed = c->op == XHAL_OP_SWIGLU_PACKED_BACKWARD;
  with_element(c->dtype, [&]<class E>() { swiglu_backward_rows_typed<E>(c, packed); });
}

}  // namespace xhal::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace xhal::cpu {

HWY_EXPORT(swiglu_backward_rows);

namespace {
template <class E>
struct SwigluBackwardSimd {
  static xhal_status run(const xhal_op_call* c, char*, size_t) {
    HWY_DYNAMIC_DISPATCH(swiglu_backward_rows)(c);
    return XHAL_OK;
  }
};
}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_fast_kernels<SwigluBackwardSimd>(host, "cpu.swiglu_backward_simd", XHAL_OP_SWIGLU_BACKWARD);
  register_fast_kernels<SwigluBackwardSimd>(host, "cpu.swiglu_packed_backward_simd", XHAL_OP_SWIGLU_PACKED_BACKWARD);
}

}  // namespace xhal::cpu
#endif

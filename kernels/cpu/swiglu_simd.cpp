// swiglu and swiglu_packed with SIMD (Highway, best target picked at run time): rows in parallel,
// one pass, silu(g) = g / (1 + e^-g) with Highway's vector exponential (max error about 1 ulp).
// Registered above the portable reference kernels of swiglu.cpp.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/swiglu_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include <cmath>

#include "kernels/cpu/kernel_registration.hpp"
#include "kernels/cpu/simd_element-inl.h"
#include "kernels/cpu/tensor_ref.hpp"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {

template <class E>
void swiglu_row(const typename E::Storage* gate, const typename E::Storage* up, typename E::Storage* out,
                int64_t n) {
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df));
  const auto one = hn::Set(df, 1.0f);
  // e^-g overflows f32 past 88.7; clamping there keeps silu(g) = g / (1 + e^88) ~ -0 for g < -88.
  const auto limit = hn::Set(df, 88.0f);
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto g = load_f32<E>(gate + i);
    const auto e = hn::Exp(df, hn::Min(hn::Neg(g), limit));
    store_f32<E>(hn::Mul(hn::Div(g, hn::Add(one, e)), load_f32<E>(up + i)), out + i);
  }
  for (; i < n; ++i) {
    const float g = E::load(gate[i]);
    out[i] = E::store(g / (1.0f + std::exp(-g)) * E::load(up[i]));
  }
}

// packed: gate and up are the two halves of each row of the input.
template <class E>
void swiglu_rows_typed(const xhal_op_call* c, bool packed) {
  using S = typename E::Storage;
  const TensorRef<const S> gate(c->t[XHAL_SLOT_GATE]);
  const TensorRef<const S> up(packed ? c->t[XHAL_SLOT_GATE] : c->t[XHAL_SLOT_UP]);
  const TensorRef<S> out(c->t[XHAL_SLOT_ACT_OUT]);
  const int64_t n = out.size(-1), rows = out.rows();
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) swiglu_row<E>(gate.row(r), up.row(r) + (packed ? n : 0), out.row(r), n);
}

void swiglu_rows(const xhal_op_call* c) {
  const bool packed = c->op == XHAL_OP_SWIGLU_PACKED;
  switch (c->dtype) {
    case XHAL_DTYPE_F32: return swiglu_rows_typed<F32>(c, packed);
    case XHAL_DTYPE_F16: return swiglu_rows_typed<F16>(c, packed);
    default: return swiglu_rows_typed<BF16>(c, packed);
  }
}

}  // namespace xhal::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace xhal::cpu {

HWY_EXPORT(swiglu_rows);

namespace {
template <class E>
struct SwigluSimd {
  static xhal_status run(const xhal_op_call* c, char*, size_t) {
    HWY_DYNAMIC_DISPATCH(swiglu_rows)(c);
    return XHAL_OK;
  }
};
}  // namespace

void register_swiglu_simd_kernels(const xhal_host_api* host) {
  register_fast_kernels<SwigluSimd>(host, "cpu.swiglu_simd", XHAL_OP_SWIGLU);
  register_fast_kernels<SwigluSimd>(host, "cpu.swiglu_packed_simd", XHAL_OP_SWIGLU_PACKED);
}

}  // namespace xhal::cpu
#endif

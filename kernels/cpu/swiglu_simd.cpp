// swiglu and swiglu_packed with SIMD (Highway, best target picked at run time): rows in parallel,
// one pass, silu of simd_math-inl.h with a polynomial of degree 6 for f32 (relative error about
// 1e-6 on silu) or 4 for f16/bf16 (7e-5, below their rounding).
// Registered above the portable reference kernels of swiglu.cpp.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/swiglu_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/kernel_registration.hpp"
#include "kernels/cpu/simd_element-inl.h"
#include "kernels/cpu/simd_math-inl.h"
#include "kernels/cpu/tensor_ref.hpp"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {

// One row; staged (n floats) for packed rows: silu(gate) is staged first, then multiplied by up,
// so the row is read front to back as one stream (two streams 16 KiB apart ran at 2/3 the speed).
template <class E, bool kStream>
void swiglu_row(const typename E::Storage* gate, const typename E::Storage* up, typename E::Storage* out,
                int64_t n, float* staged) {
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df));
  constexpr bool kF32 = E::kDType == XHAL_DTYPE_F32;
  const int64_t pairs = n / (2 * lanes) * (2 * lanes);  // elements in whole pairs of vectors
  auto act = [](VF g) { return silu<kF32 ? 6 : 4, kF32>(g); };
  if (staged != nullptr) {
    for (int64_t i = 0; i < pairs; i += 2 * lanes) {
      hwy::Prefetch(up + i);  // the next part of the same stream
      VF g0, g1;
      load2_f32<E>(gate + i, g0, g1);
      hn::StoreU(act(g0), df, staged + i), hn::StoreU(act(g1), df, staged + i + lanes);
    }
  }
  int64_t i = 0;
  for (; i < pairs; i += 2 * lanes) {
    VF a0, a1, u0, u1;
    if (staged != nullptr) {
      a0 = hn::LoadU(df, staged + i), a1 = hn::LoadU(df, staged + i + lanes);
    } else {
      load2_f32<E>(gate + i, a0, a1);
      a0 = act(a0), a1 = act(a1);
    }
    load2_f32<E>(up + i, u0, u1);
    store2_f32<E, kStream>(hn::Mul(a0, u0), hn::Mul(a1, u1), out + i);
  }
  for (; i + lanes <= n; i += lanes) store_f32<E, kStream>(hn::Mul(act(load_f32<E>(gate + i)), load_f32<E>(up + i)), out + i);
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
  const auto row = should_stream<E>(c->t[XHAL_SLOT_ACT_OUT]) ? swiglu_row<E, true> : swiglu_row<E, false>;
#pragma omp parallel
  {
    thread_local std::vector<float> staged;  // keeps its memory from call to call
    if (packed) staged.resize(size_t(n));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      row(gate.row(r), up.row(r) + (packed ? n : 0), out.row(r), n, packed ? staged.data() : nullptr);
    }
    stream_fence();
  }
}

void swiglu_rows(const xhal_op_call* c) {
  const bool packed = c->op == XHAL_OP_SWIGLU_PACKED;
  with_element(c->dtype, [&]<class E>() { swiglu_rows_typed<E>(c, packed); });
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

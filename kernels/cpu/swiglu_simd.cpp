// swiglu and swiglu_packed with SIMD (Highway, best target picked at run time): rows in parallel,
// one pass, silu of simd_math-inl.h with 2^f by a polynomial of degree 5 for f32 (relative error
// 2e-7), 4 for f16 (4e-6) and 3 for bf16 (1e-4; its own rounding errs by up to 2e-3).
// Registered above the portable reference kernels of swiglu.cpp.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/swiglu_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <cmath>

#include "kernels/cpu/kernel_registration.hpp"
#include "kernels/cpu/simd_element-inl.h"
#include "kernels/cpu/simd_math-inl.h"
#include "kernels/cpu/tensor_ref.hpp"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {

// One row, four vectors at a time (two pairs: silu_times advances their chains together). Packed
// rows read their two halves as two streams 16 KiB apart: staging silu(gate) in f32 first, to read
// the row as one stream, was no faster on Zen 3 and 10% slower on a 16-core Xeon (it had helped on
// Zen 5 with the earlier, slower silu). Every value is computed from the row's own elements, so
// bf16 is rounded without a NaN test (NaNs::from_bf16).
template <class E, bool kStream>
void swiglu_row(const typename E::Storage* gate, const typename E::Storage* up, typename E::Storage* out, int64_t n) {
  using S = typename E::Storage;
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
    silu_times<4, kDegree, kF32>(a, g, u);
    store2_f32<E, kStream, NaNs::from_bf16>(a[0], a[1], out + i);
    store2_f32<E, kStream, NaNs::from_bf16>(a[2], a[3], out + i + 2 * lanes);
  }
  for (; i + lanes <= n; i += lanes) {
    VF a[1];
    const VF g[1] = {load_f32<E>(gate + i)}, u[1] = {load_f32<E>(up + i)};
    silu_times<1, kDegree, kF32>(a, g, u);
    store_f32<E, kStream, NaNs::from_bf16>(a[0], out + i);
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
  const TensorRef<const S> gate(c->tensors[XHAL_SWIGLU_GATE]);
  const TensorRef<const S> up(packed ? c->tensors[XHAL_SWIGLU_GATE] : c->tensors[XHAL_SWIGLU_UP]);
  const TensorRef<S> out(c->tensors[XHAL_SWIGLU_OUT]);
  const int64_t n = out.size(-1), rows = out.rows();
  const auto row = should_stream<E>(c->tensors[XHAL_SWIGLU_OUT]) ? swiglu_row<E, true> : swiglu_row<E, false>;
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) row(gate.row(r), up.row(r) + (packed ? n : 0), out.row(r), n);
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

XHAL_REGISTER_KERNELS(host) {
  register_fast_kernels<SwigluSimd>(host, "cpu.swiglu_simd", XHAL_OP_SWIGLU);
  register_fast_kernels<SwigluSimd>(host, "cpu.swiglu_packed_simd", XHAL_OP_SWIGLU_PACKED);
}

}  // namespace xhal::cpu
#endif

// add and mul with SIMD (Highway, best target picked at run time): rows in parallel, one pass,
// four vectors at a time, y's row read again for every row when it is broadcast; streaming stores
// for outputs far beyond the caches. Registered above the reference kernels of
// binary_elementwise.cpp.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/binary_elementwise_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kernels/binary_elementwise.hpp"
#include "kernels/cpu/kernel_registration.hpp"
#include "kernels/cpu/simd_element-inl.h"
#include "kernels/cpu/tensor_ref.hpp"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {

// The vector form of a formula of kernels/binary_elementwise.hpp.
template <class F>
HWY_INLINE VF apply(VF x, VF y) {
  if constexpr (std::is_same_v<F, kernels::Sum>) {
    return hn::Add(x, y);
  } else {
    return hn::Mul(x, y);
  }
}

template <class E, class F, bool kStream>
void binary_row(const typename E::Storage* x, const typename E::Storage* y, typename E::Storage* out, int64_t n) {
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df));
  int64_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    VF a[4], b[4];
    load2_f32<E>(x + i, a[0], a[1]), load2_f32<E>(x + i + 2 * lanes, a[2], a[3]);
    load2_f32<E>(y + i, b[0], b[1]), load2_f32<E>(y + i + 2 * lanes, b[2], b[3]);
    for (int k = 0; k < 4; ++k) a[k] = apply<F>(a[k], b[k]);
    store2_f32<E, kStream>(a[0], a[1], out + i);
    store2_f32<E, kStream>(a[2], a[3], out + i + 2 * lanes);
  }
  for (; i + lanes <= n; i += lanes) store_f32<E, kStream>(apply<F>(load_f32<E>(x + i), load_f32<E>(y + i)), out + i);
  for (; i < n; ++i) out[i] = E::store(F::apply(E::load(x[i]), E::load(y[i])));
}

template <class E, class F>
void binary_rows_typed(const xhal_op_call* c) {
  using S = typename E::Storage;
  const TensorRef<const S> x(c->tensors[XHAL_ADD_X]), y(c->tensors[XHAL_ADD_Y]);
  const TensorRef<S> out(c->tensors[XHAL_ADD_OUT]);
  const int64_t n = out.size(-1), rows = out.rows();
  const bool broadcast = y.rows() == 1;
  const auto row = should_stream<E>(c->tensors[XHAL_ADD_OUT]) ? binary_row<E, F, true> : binary_row<E, F, false>;
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) row(x.row(r), broadcast ? y.row(0) : y.row(r), out.row(r), n);
    stream_fence();
  }
}

void binary_rows(const xhal_op_call* c) {
  kernels::with_binary_op(
      c, [&](auto f) { with_element(c->dtype, [&]<class E>() { binary_rows_typed<E, decltype(f)>(c); }); });
}

}  // namespace xhal::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace xhal::cpu {

HWY_EXPORT(binary_rows);

namespace {
template <class E>
struct BinaryElementwiseSimd {
  static xhal_status run(const xhal_op_call* c, char*, size_t) {
    HWY_DYNAMIC_DISPATCH(binary_rows)(c);
    return XHAL_OK;
  }
};
}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_fast_kernels<BinaryElementwiseSimd>(host, "cpu.add_simd", XHAL_OP_ADD);
  register_fast_kernels<BinaryElementwiseSimd>(host, "cpu.mul_simd", XHAL_OP_MUL);
}

}  // namespace xhal::cpu
#endif

// rms_norm and fused_add_rms_norm with SIMD (Highway, the best target for this CPU picked at run
// time): rows in parallel; a row's squares are summed in vectors (for fused_add_rms_norm while the
// residual is added and stored back), then the row is re-read from the cache, scaled and stored,
// with streaming stores when the output is far larger than the caches. Every stored value is
// computed from the op's bf16 inputs and eps (checked finite), so bf16 is rounded without a NaN
// test (NaNs::from_bf16).
// Registered above the portable reference kernels of rms_norm.cpp.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/rms_norm_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/kernel_registration.hpp"
#include "kernels/cpu/simd_element-inl.h"
#include "kernels/cpu/tensor_ref.hpp"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {

// One row: x (+ residual, written back) summed in squares, then re-read (from the cache: a row is
// tens of KiB) and scaled: out = v / rms * weight, v the residual when there is one.
template <class E, bool kStream>
void norm_row(const typename E::Storage* x, typename E::Storage* residual, const typename E::Storage* weight, float eps,
              int64_t n, typename E::Storage* out, const typename E::Storage* next) {
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df));
  float total = 0.0f;
  if (residual == nullptr) {
    total = sum_squares<E>(x, n);
  } else {
    auto sum0 = hn::Zero(df), sum1 = hn::Zero(df);
    int64_t i = 0;
    for (; i + 2 * lanes <= n; i += 2 * lanes) {
      VF x0, x1, r0, r1;
      load2_f32<E>(x + i, x0, x1), load2_f32<E>(residual + i, r0, r1);
      store2_f32<E, false, NaNs::from_bf16>(hn::Add(x0, r0), hn::Add(x1, r1), residual + i);
      load2_f32<E>(residual + i, r0, r1);  // the norm uses the stored value, as the next layer will
      sum0 = hn::MulAdd(r0, r0, sum0), sum1 = hn::MulAdd(r1, r1, sum1);
    }
    for (; i + lanes <= n; i += lanes) {
      store_f32<E, false, NaNs::from_bf16>(hn::Add(load_f32<E>(x + i), load_f32<E>(residual + i)), residual + i);
      const auto v = load_f32<E>(residual + i);
      sum0 = hn::MulAdd(v, v, sum0);
    }
    total = hn::GetLane(hn::SumOfLanes(df, hn::Add(sum0, sum1)));
    for (; i < n; ++i) {
      residual[i] = E::store(E::load(x[i]) + E::load(residual[i]));
      total += E::load(residual[i]) * E::load(residual[i]);
    }
  }
  const typename E::Storage* src = residual != nullptr ? residual : x;
  const float inv_rms = 1.0f / std::sqrt(total / float(n) + eps);
  const auto scale = hn::Set(df, inv_rms);
  auto scaled = [&](int64_t i) { return hn::Mul(hn::Mul(load_f32<E>(src + i), scale), load_f32<E>(weight + i)); };
  // While this row is written, the next one is fetched: otherwise the memory would see only
  // writes now and only reads during the next row's sum.
  constexpr int64_t kLine = 64 / int64_t(sizeof(typename E::Storage));
  int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    if (next != nullptr && i % kLine == 0) hwy::Prefetch(next + i);
    VF x0, x1, w0, w1;
    load2_f32<E>(src + i, x0, x1), load2_f32<E>(weight + i, w0, w1);
    store2_f32<E, kStream, NaNs::from_bf16>(hn::Mul(hn::Mul(x0, scale), w0), hn::Mul(hn::Mul(x1, scale), w1), out + i);
  }
  for (; i + lanes <= n; i += lanes) store_f32<E, kStream, NaNs::from_bf16>(scaled(i), out + i);
  for (; i < n; ++i) out[i] = E::store(E::load(src[i]) * inv_rms * E::load(weight[i]));
}

template <class E>
void norm_rows_typed(const xhal_op_call* c) {
  using S = typename E::Storage;
  const TensorRef<const S> x(c->tensors[XHAL_RMS_NORM_X]), w(c->tensors[XHAL_RMS_NORM_WEIGHT]);
  const TensorRef<S> out(c->tensors[XHAL_RMS_NORM_OUT]),
      residual(kernels::tensor_at(c, XHAL_FUSED_ADD_RMS_NORM_RESIDUAL));
  const int64_t n = x.size(-1), rows = x.rows();
  // The weight contiguous and in the element type: as f32 it would take twice the L1 cache that
  // the row being normalised needs too.
  std::vector<S> weight(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) weight[size_t(i)] = *w.at(i);
  const auto norm = should_stream<E>(c->tensors[XHAL_RMS_NORM_OUT]) ? norm_row<E, true> : norm_row<E, false>;
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      norm(x.row(r), residual ? residual.row(r) : nullptr, weight.data(),
           kernels::op_params<xhal_norm_op_params>(c).eps, n, out.row(r), r + 1 < rows ? x.row(r + 1) : nullptr);
    }
    stream_fence();
  }
}

void norm_rows(const xhal_op_call* c) {
  with_element(c->dtype, [&]<class E>() { norm_rows_typed<E>(c); });
}

}  // namespace xhal::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace xhal::cpu {

HWY_EXPORT(norm_rows);

namespace {
template <class E>
struct RmsNormSimd {
  static xhal_status run(const xhal_op_call* c, char*, size_t) {
    HWY_DYNAMIC_DISPATCH(norm_rows)(c);
    return XHAL_OK;
  }
};
}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_fast_kernels<RmsNormSimd>(host, "cpu.rms_norm_simd", XHAL_OP_RMS_NORM);
  register_fast_kernels<RmsNormSimd>(host, "cpu.fused_add_rms_norm_simd", XHAL_OP_FUSED_ADD_RMS_NORM);
}

}  // namespace xhal::cpu
#endif

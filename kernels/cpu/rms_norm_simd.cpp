// rms_norm and fused_add_rms_norm with SIMD (Highway, the best target for this CPU picked at run
// time): rows in parallel; a row's squares are summed in vectors (for fused_add_rms_norm while the
// residual is added and stored back), then the row is re-read from the cache, scaled and stored,
// with streaming stores when the output is far larger than the caches.
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
void norm_row(const typename E::Storage* x, typename E::Storage* residual, const float* weight, float eps,
              int64_t n, typename E::Storage* out, const typename E::Storage* next) {
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df));
  auto sum0 = hn::Zero(df), sum1 = hn::Zero(df);
  int64_t i = 0;
  if (residual == nullptr) {
    for (; i + 2 * lanes <= n; i += 2 * lanes) {  // two sums: the FMA latency is not the limit
      const auto a = load_f32<E>(x + i), b = load_f32<E>(x + i + lanes);
      sum0 = hn::MulAdd(a, a, sum0);
      sum1 = hn::MulAdd(b, b, sum1);
    }
  }
  for (; i + lanes <= n; i += lanes) {
    auto v = load_f32<E>(x + i);
    if (residual != nullptr) {
      store_f32<E>(hn::Add(v, load_f32<E>(residual + i)), residual + i);
      v = load_f32<E>(residual + i);  // the norm uses the stored value, as the next layer will
    }
    sum0 = hn::MulAdd(v, v, sum0);
  }
  float total = hn::GetLane(hn::SumOfLanes(df, hn::Add(sum0, sum1)));
  for (; i < n; ++i) {
    float v = E::load(x[i]);
    if (residual != nullptr) {
      residual[i] = E::store(v + E::load(residual[i]));
      v = E::load(residual[i]);
    }
    total += v * v;
  }
  const typename E::Storage* src = residual != nullptr ? residual : x;
  const float inv_rms = 1.0f / std::sqrt(total / float(n) + eps);
  const auto scale = hn::Set(df, inv_rms);
  i = 0;
  for (; i + lanes <= n; i += lanes) {
    if (next != nullptr) hwy::Prefetch(next + i);
    store_f32<E, kStream>(hn::Mul(hn::Mul(load_f32<E>(src + i), scale), hn::LoadU(df, weight + i)), out + i);
  }
  for (; i < n; ++i) out[i] = E::store(E::load(src[i]) * inv_rms * weight[i]);
}

template <class E>
void norm_rows_typed(const xhal_op_call* c) {
  using S = typename E::Storage;
  const TensorRef<const S> x(c->t[XHAL_SLOT_X]), w(c->t[XHAL_SLOT_WEIGHT]);
  const TensorRef<S> out(c->t[XHAL_SLOT_NORM_OUT]), residual(c->t[XHAL_SLOT_RESIDUAL]);
  const int64_t n = x.size(-1), rows = x.rows();
  std::vector<float> weight(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) weight[size_t(i)] = E::load(*w.at(i));
  const auto norm = should_stream<E>(c->t[XHAL_SLOT_NORM_OUT]) ? norm_row<E, true> : norm_row<E, false>;
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      norm(x.row(r), residual ? residual.row(r) : nullptr, weight.data(), c->params.eps, n, out.row(r),
           r + 1 < rows ? x.row(r + 1) : nullptr);
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

void register_norm_simd_kernels(const xhal_host_api* host) {
  register_fast_kernels<RmsNormSimd>(host, "cpu.rms_norm_simd", XHAL_OP_RMS_NORM);
  register_fast_kernels<RmsNormSimd>(host, "cpu.fused_add_rms_norm_simd", XHAL_OP_FUSED_ADD_RMS_NORM);
}

}  // namespace xhal::cpu
#endif

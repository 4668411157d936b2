// layer_norm with SIMD (Highway, the best target for this CPU picked at run time): rows in
// parallel; a row's sum, then its squared deviations from the mean and the output, both from the
// cache (a row is tens of KiB), the output with streaming stores when it is far larger than the
// caches and the next row fetched while this one is written. Registered above the reference
// kernel of layer_norm.cpp.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/layer_norm_simd.cpp"
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

// out = (x - mean) inv_std weight + bias (bias null: none) over one row.
template <class E, bool kStream>
void layer_norm_row(const typename E::Storage* x, const typename E::Storage* weight, const typename E::Storage* bias,
                    float eps, int64_t n, typename E::Storage* out, const typename E::Storage* next) {
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df));
  auto s0 = hn::Zero(df), s1 = hn::Zero(df);
  int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    VF a, b;
    load2_f32<E>(x + i, a, b);
    s0 = hn::Add(s0, a), s1 = hn::Add(s1, b);
  }
  for (; i + lanes <= n; i += lanes) s0 = hn::Add(s0, load_f32<E>(x + i));
  float sum = hn::GetLane(hn::SumOfLanes(df, hn::Add(s0, s1)));
  for (; i < n; ++i) sum += E::load(x[i]);
  const float mean = sum / float(n);
  const VF mv = hn::Set(df, mean);
  s0 = hn::Zero(df), s1 = hn::Zero(df);
  for (i = 0; i + 2 * lanes <= n; i += 2 * lanes) {
    VF a, b;
    load2_f32<E>(x + i, a, b);
    a = hn::Sub(a, mv), b = hn::Sub(b, mv);
    s0 = hn::MulAdd(a, a, s0), s1 = hn::MulAdd(b, b, s1);
  }
  for (; i + lanes <= n; i += lanes) {
    const VF a = hn::Sub(load_f32<E>(x + i), mv);
    s0 = hn::MulAdd(a, a, s0);
  }
  float squares = hn::GetLane(hn::SumOfLanes(df, hn::Add(s0, s1)));
  for (; i < n; ++i) squares += (E::load(x[i]) - mean) * (E::load(x[i]) - mean);
  const float inv_std = 1.0f / std::sqrt(squares / float(n) + eps);
  const VF sv = hn::Set(df, inv_std);
  // One vector pair: ((x - mean) inv_std) weight + bias.
  const auto normed = [&](VF v, VF w, VF b) { return hn::MulAdd(hn::Mul(hn::Sub(v, mv), sv), w, b); };
  constexpr int64_t kLine = 64 / int64_t(sizeof(typename E::Storage));
  for (i = 0; i + 2 * lanes <= n; i += 2 * lanes) {
    if (next != nullptr && i % kLine == 0) hwy::Prefetch(next + i);
    VF a, b, w0, w1, b0 = hn::Zero(df), b1 = hn::Zero(df);
    load2_f32<E>(x + i, a, b), load2_f32<E>(weight + i, w0, w1);
    if (bias != nullptr) load2_f32<E>(bias + i, b0, b1);
    store2_f32<E, kStream>(normed(a, w0, b0), normed(b, w1, b1), out + i);
  }
  for (; i + lanes <= n; i += lanes) {
    const VF b = bias != nullptr ? load_f32<E>(bias + i) : hn::Zero(df);
    store_f32<E, kStream>(normed(load_f32<E>(x + i), load_f32<E>(weight + i), b), out + i);
  }
  for (; i < n; ++i) {
    const float y = (E::load(x[i]) - mean) * inv_std * E::load(weight[i]);
    out[i] = E::store(bias != nullptr ? y + E::load(bias[i]) : y);
  }
}

template <class E>
void layer_norm_rows_typed(const xhal_op_call* c) {
  using S = typename E::Storage;
  const TensorRef<const S> x(c->tensors[XHAL_LAYER_NORM_X]), w(c->tensors[XHAL_LAYER_NORM_WEIGHT]);
  const TensorRef<const S> b(kernels::tensor_at(c, XHAL_LAYER_NORM_BIAS));
  const TensorRef<S> out(c->tensors[XHAL_LAYER_NORM_OUT]);
  const int64_t n = x.size(-1), rows = x.rows();
  // The weight and bias contiguous and in the element type (as rms_norm's kernel keeps them).
  std::vector<S> weight(static_cast<size_t>(n)), bias(b ? static_cast<size_t>(n) : 0);
  for (int64_t i = 0; i < n; ++i) weight[size_t(i)] = *w.at(i);
  for (int64_t i = 0; b && i < n; ++i) bias[size_t(i)] = *b.at(i);
  const float eps = kernels::op_params<xhal_norm_op_params>(c).eps;
  const auto row =
      should_stream<E>(c->tensors[XHAL_LAYER_NORM_OUT]) ? layer_norm_row<E, true> : layer_norm_row<E, false>;
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      row(x.row(r), weight.data(), b ? bias.data() : nullptr, eps, n, out.row(r),
          r + 1 < rows ? x.row(r + 1) : nullptr);
    }
    stream_fence();
  }
}

void layer_norm_rows(const xhal_op_call* c) {
  with_element(c->dtype, [&]<class E>() { layer_norm_rows_typed<E>(c); });
}

}  // namespace xhal::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace xhal::cpu {

HWY_EXPORT(layer_norm_rows);

namespace {
template <class E>
struct LayerNormSimd {
  static xhal_status run(const xhal_op_call* c, char*, size_t) {
    HWY_DYNAMIC_DISPATCH(layer_norm_rows)(c);
    return XHAL_OK;
  }
};
}  // namespace

XHAL_REGISTER_KERNELS(host) { register_fast_kernels<LayerNormSimd>(host, "cpu.layer_norm_simd", XHAL_OP_LAYER_NORM); }

}  // namespace xhal::cpu
#endif

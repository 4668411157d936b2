// rms_norm_backward and fused_add_rms_norm_backward with SIMD (Highway, best target picked at run
// time). dweight is summed by RowBlockSums, as in the reference kernel: the same bits whatever the
// thread count. A row is read twice, the second time from the cache: its two sums (x^2 and
// dout weight x), then dx and the block's dweight terms, while the next row is fetched. Every
// stored value is computed from the op's bf16 inputs and eps, so bf16 is rounded without a NaN
// test (NaNs::from_bf16). Registered above the reference kernels.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/rms_norm_backward_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/kernel_registration.hpp"
#include "kernels/cpu/row_block_sums.hpp"
#include "kernels/cpu/simd_element-inl.h"
#include "kernels/cpu/tensor_ref.hpp"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {

// One row: dx (and the residual's gradient) written, the row's dweight terms added to `partial`.
// While the row is written, the next row's x and dout are fetched (next_x, next_dout; null for the
// last): otherwise the memory would see only writes now and only reads during the next row's sums.
// dx == dres (in place) is written once. kStream: streaming stores for dx.
template <class E, bool kStream>
void backward_row(const typename E::Storage* x, const typename E::Storage* dout, const float* weight, int64_t n,
                  float eps, typename E::Storage* dx, typename E::Storage* dres, float* partial,
                  const typename E::Storage* next_x, const typename E::Storage* next_dout) {
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df));
  auto sumsq0 = hn::Zero(df), sumsq1 = hn::Zero(df), dot0 = hn::Zero(df), dot1 = hn::Zero(df);
  int64_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    const VF x0 = load_f32<E>(x + i), x1 = load_f32<E>(x + i + lanes);
    const VF g0 = hn::Mul(load_f32<E>(dout + i), hn::LoadU(df, weight + i));
    const VF g1 = hn::Mul(load_f32<E>(dout + i + lanes), hn::LoadU(df, weight + i + lanes));
    sumsq0 = hn::MulAdd(x0, x0, sumsq0), sumsq1 = hn::MulAdd(x1, x1, sumsq1);
    dot0 = hn::MulAdd(g0, x0, dot0), dot1 = hn::MulAdd(g1, x1, dot1);
  }
  for (; i + lanes <= n; i += lanes) {
    const VF xv = load_f32<E>(x + i), gv = hn::Mul(load_f32<E>(dout + i), hn::LoadU(df, weight + i));
    sumsq0 = hn::MulAdd(xv, xv, sumsq0);
    dot0 = hn::MulAdd(gv, xv, dot0);
  }
  float ss = hn::GetLane(hn::SumOfLanes(df, hn::Add(sumsq0, sumsq1)));
  float dt = hn::GetLane(hn::SumOfLanes(df, hn::Add(dot0, dot1)));
  for (int64_t k = i; k < n; ++k) {
    const float xv = E::load(x[k]);
    ss += xv * xv;
    dt += E::load(dout[k]) * weight[k] * xv;
  }
  const float inv_rms = 1.0f / std::sqrt(ss / float(n) + eps);
  const float coeff = inv_rms * inv_rms * dt / float(n);
  const VF r = hn::Set(df, inv_rms), cv = hn::Set(df, coeff);
  const bool separate = dres != nullptr && dres != dx;  // the residual's gradient in a tensor of its own
  constexpr int64_t kLine = 64 / int64_t(sizeof(typename E::Storage));
  const auto one = [&](int64_t k) {
    const VF xv = load_f32<E>(x + k), dv = load_f32<E>(dout + k);
    hn::StoreU(hn::MulAdd(hn::Mul(dv, xv), r, hn::LoadU(df, partial + k)), df, partial + k);
    VF d = hn::Mul(r, hn::NegMulAdd(xv, cv, hn::Mul(dv, hn::LoadU(df, weight + k))));
    if (dres != nullptr) d = hn::Add(d, load_f32<E>(dres + k));
    if (separate) store_f32<E, false, NaNs::from_bf16>(d, dres + k);
    store_f32<E, kStream, NaNs::from_bf16>(d, dx + k);
  };
  i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    if (next_x != nullptr && i % kLine == 0) hwy::Prefetch(next_x + i), hwy::Prefetch(next_dout + i);
    one(i);
    one(i + lanes);
  }
  for (; i + lanes <= n; i += lanes) one(i);
  for (; i < n; ++i) {
    const float xv = E::load(x[i]), dv = E::load(dout[i]);
    partial[i] += dv * xv * inv_rms;
    float d = inv_rms * (dv * weight[i] - xv * coeff);
    if (dres != nullptr) {
      d += E::load(dres[i]);
      dres[i] = E::store(d);
    }
    dx[i] = E::store(d);
  }
}

// False when the allocator had no scratch to give.
template <class E>
bool backward_rows_typed(const xhal_op_call* c) {
  using S = typename E::Storage;
  const TensorRef<const S> dout(c->tensors[XHAL_RMS_NORM_BACKWARD_DOUT]), x(c->tensors[XHAL_RMS_NORM_BACKWARD_X]);
  const TensorRef<const S> w(c->tensors[XHAL_RMS_NORM_BACKWARD_WEIGHT]);
  const TensorRef<S> dx(c->tensors[XHAL_RMS_NORM_BACKWARD_DX]), dweight(c->tensors[XHAL_RMS_NORM_BACKWARD_DWEIGHT]);
  const TensorRef<S> dresidual(kernels::tensor_at(c, XHAL_FUSED_ADD_RMS_NORM_BACKWARD_DRESIDUAL));
  const int64_t n = dout.size(-1), rows = n == 0 ? 0 : dout.numel() / n;
  if (n == 0) return true;
  const float eps = kernels::op_params<xhal_norm_op_params>(c).eps;
  const RowBlockSums sums(c, rows, n);
  if (!sums.ok()) return false;
  std::vector<float> weight(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) weight[size_t(i)] = E::load(w.data[i]);
  // Streaming stores for dx when it is large and the residual's gradient, if any, is dx itself.
  const DLTensor* dx_tensor = c->tensors[XHAL_RMS_NORM_BACKWARD_DX];
  const bool stream = should_stream<E>(dx_tensor) && (!dresidual || dresidual.data == dx.data);
  const auto row_fn = stream ? backward_row<E, true> : backward_row<E, false>;
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int64_t b = 0; b < sums.blocks(); ++b) {
      float* partial = sums.start(b);
      const int64_t end = sums.end_row(b);
      for (int64_t row = sums.first_row(b); row < end; ++row) {
        const bool last = row + 1 == end;
        row_fn(x.row(row), dout.row(row), weight.data(), n, eps, dx.row(row), dresidual ? dresidual.row(row) : nullptr,
               partial, last ? nullptr : x.row(row + 1), last ? nullptr : dout.row(row + 1));
      }
    }
    stream_fence();
    sums.add_into<E>(dweight.data, dweight.stride(0));
  }
  return true;
}

bool backward_rows(const xhal_op_call* c) {
  bool ok = false;
  with_element(c->dtype, [&]<class E>() { ok = backward_rows_typed<E>(c); });
  return ok;
}

}  // namespace xhal::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace xhal::cpu {

HWY_EXPORT(backward_rows);

namespace {
template <class E>
struct RmsNormBackwardSimd {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    if (HWY_DYNAMIC_DISPATCH(backward_rows)(c)) return XHAL_OK;
    return workspaces_refused(msg, len,
                              c->op == XHAL_OP_RMS_NORM_BACKWARD ? "rms_norm_backward" : "fused_add_rms_norm_backward");
  }
};
}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_fast_kernels<RmsNormBackwardSimd>(host, "cpu.rms_norm_backward_simd", XHAL_OP_RMS_NORM_BACKWARD);
  register_fast_kernels<RmsNormBackwardSimd>(host, "cpu.fused_add_rms_norm_backward_simd",
                                             XHAL_OP_FUSED_ADD_RMS_NORM_BACKWARD);
}

}  // namespace xhal::cpu
#endif

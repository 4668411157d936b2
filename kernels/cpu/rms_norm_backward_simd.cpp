// rms_norm_backward and fused_add_rms_norm_backward with SIMD (Highway, best target picked at run
// time). dweight is summed by RowBlockSums, as in the reference kernel: the same bits whatever the
// thread count. A row is read
// twice, the second time from the cache: its two sums (x^2 and dout weight x), then dx and the
// block's dweight terms. Registered above the reference kernels.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/rms_norm_backward_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
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
template <class E>
void backward_row(const typename E::Storage* x, const typename E::Storage* dout, const float* weight, int64_t n,
                  float eps, typename E::Storage* dx, typename E::Storage* dres, float* partial) {
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df));
  auto sumsq = hn::Zero(df), dot = hn::Zero(df);
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const VF xv = load_f32<E>(x + i), gv = hn::Mul(load_f32<E>(dout + i), hn::LoadU(df, weight + i));
    sumsq = hn::MulAdd(xv, xv, sumsq);
    dot = hn::MulAdd(gv, xv, dot);
  }
  float ss = hn::GetLane(hn::SumOfLanes(df, sumsq)), dt = hn::GetLane(hn::SumOfLanes(df, dot));
  for (int64_t k = i; k < n; ++k) {
    const float xv = E::load(x[k]);
    ss += xv * xv;
    dt += E::load(dout[k]) * weight[k] * xv;
  }
  const float inv_rms = 1.0f / std::sqrt(ss / float(n) + eps);
  const float coeff = inv_rms * inv_rms * dt / float(n);
  const VF r = hn::Set(df, inv_rms), cv = hn::Set(df, coeff);
  i = 0;
  for (; i + lanes <= n; i += lanes) {
    const VF xv = load_f32<E>(x + i), dv = load_f32<E>(dout + i);
    hn::StoreU(hn::MulAdd(hn::Mul(dv, xv), r, hn::LoadU(df, partial + i)), df, partial + i);
    VF d = hn::Mul(r, hn::NegMulAdd(xv, cv, hn::Mul(dv, hn::LoadU(df, weight + i))));
    if (dres != nullptr) {
      d = hn::Add(d, load_f32<E>(dres + i));
      store_f32<E>(d, dres + i);
    }
    store_f32<E>(d, dx + i);
  }
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
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int64_t b = 0; b < sums.blocks(); ++b) {
      float* partial = sums.start(b);
      for (int64_t row = sums.first_row(b); row < sums.end_row(b); ++row) {
        // dx may be dresidual itself: the row is then written twice with the same values.
        backward_row<E>(x.row(row), dout.row(row), weight.data(), n, eps, dx.row(row),
                        dresidual ? dresidual.row(row) : nullptr, partial);
      }
    }
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

// rms_norm and fused_add_rms_norm with SIMD (Highway, the best target for this CPU picked at run
// time): rows in parallel; a row is read once into an f32 buffer (with the residual added and
// stored back for fused_add_rms_norm), its squares summed in vectors, then scaled and stored.
// Registered above the portable reference kernels of rms_norm.cpp.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/rms_norm_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/aligned_allocator.h>
#include <hwy/highway.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/kernel_registration.hpp"
#include "kernels/cpu/simd_element-inl.h"
#include "kernels/cpu/tensor_ref.hpp"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {

// One row: x (+ residual, written back) -> row (f32) -> out = row / rms * weight.
template <class E>
void norm_row(const typename E::Storage* x, typename E::Storage* residual, const float* weight, float eps,
              int64_t n, float* row, typename E::Storage* out) {
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df));
  auto sum = hn::Zero(df);
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    auto v = load_f32<E>(x + i);
    if (residual != nullptr) {
      store_f32<E>(hn::Add(v, load_f32<E>(residual + i)), residual + i);
      v = load_f32<E>(residual + i);  // the norm uses the stored value, as the next layer will
    }
    hn::Store(v, df, row + i);
    sum = hn::MulAdd(v, v, sum);
  }
  float total = hn::GetLane(hn::SumOfLanes(df, sum));
  for (; i < n; ++i) {
    float v = E::load(x[i]);
    if (residual != nullptr) {
      residual[i] = E::store(v + E::load(residual[i]));
      v = E::load(residual[i]);
    }
    row[i] = v;
    total += v * v;
  }
  const auto scale = hn::Set(df, 1.0f / std::sqrt(total / float(n) + eps));
  i = 0;
  for (; i + lanes <= n; i += lanes) {
    store_f32<E>(hn::Mul(hn::Mul(hn::Load(df, row + i), scale), hn::LoadU(df, weight + i)), out + i);
  }
  for (; i < n; ++i) out[i] = E::store(row[i] * hn::GetLane(scale) * weight[i]);
}

template <class E>
void norm_rows_typed(const xhal_op_call* c) {
  using S = typename E::Storage;
  const TensorRef<const S> x(c->t[XHAL_SLOT_X]), w(c->t[XHAL_SLOT_WEIGHT]);
  const TensorRef<S> out(c->t[XHAL_SLOT_NORM_OUT]), residual(c->t[XHAL_SLOT_RESIDUAL]);
  const int64_t n = x.size(-1), rows = x.rows();
  std::vector<float> weight(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) weight[size_t(i)] = E::load(*w.at(i));
#pragma omp parallel
  {
    // One aligned f32 row per thread.
    auto row = hwy::AllocateAligned<float>(static_cast<size_t>(n));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      norm_row<E>(x.row(r), residual ? residual.row(r) : nullptr, weight.data(), c->params.eps, n, row.get(),
                  out.row(r));
    }
  }
}

void norm_rows(const xhal_op_call* c) {
  switch (c->dtype) {
    case XHAL_DTYPE_F32: return norm_rows_typed<F32>(c);
    case XHAL_DTYPE_F16: return norm_rows_typed<F16>(c);
    default: return norm_rows_typed<BF16>(c);
  }
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

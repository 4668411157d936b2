// adamw_step and global_grad_norm with SIMD (Highway, best target picked at run time), registered
// above the reference kernels of optimizer.cpp.
// adamw_step: the list's buffers in ranges of whole vectors, in parallel; each element's update as
// kernels::AdamWUpdate's (f32, the bias corrections in f64 once), sqrt and division in vectors.
// global_grad_norm: the reference's chunks (optimizer_shared.hpp), each summed in four vector
// accumulators in a fixed order: the same bits whatever the thread count.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/optimizer_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/kernel_registration.hpp"
#include "kernels/cpu/optimizer_shared.hpp"
#include "kernels/cpu/simd_element-inl.h"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {

// Elements [i0, i1) of the buffers; master may be null (the parameter is then the weight).
template <class E>
void adamw_range(typename E::Storage* param, const typename E::Storage* grad, float* m, float* v, float* master,
                 int64_t i0, int64_t i1, const kernels::AdamWUpdate& k) {
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df));
  const auto b1 = hn::Set(df, k.beta1), b2 = hn::Set(df, k.beta2), one_b1 = hn::Set(df, 1.0f - k.beta1);
  const auto one_b2 = hn::Set(df, 1.0f - k.beta2), eps = hn::Set(df, k.eps), scale = hn::Set(df, k.scale);
  const auto step = hn::Set(df, k.step_size), bc2 = hn::Set(df, k.inv_sqrt_bc2), decay = hn::Set(df, k.decay);
  int64_t i = i0;
  for (; i + lanes <= i1; i += lanes) {
    const auto g = hn::Mul(load_f32<E>(grad + i), scale);
    const auto w0 = master != nullptr ? hn::LoadU(df, master + i) : load_f32<E>(param + i);
    const auto mi = hn::MulAdd(b1, hn::LoadU(df, m + i), hn::Mul(one_b1, g));
    const auto vi = hn::MulAdd(b2, hn::LoadU(df, v + i), hn::Mul(hn::Mul(one_b2, g), g));
    const auto w = hn::Sub(hn::Mul(w0, decay), hn::Div(hn::Mul(step, mi), hn::MulAdd(hn::Sqrt(vi), bc2, eps)));
    hn::StoreU(mi, df, m + i);
    hn::StoreU(vi, df, v + i);
    if (master != nullptr) hn::StoreU(w, df, master + i);
    store_f32<E>(w, param + i);
  }
  for (; i < i1; ++i) {
    const float w = k(E::load(grad[i]), master != nullptr ? master[i] : E::load(param[i]), m[i], v[i]);
    if (master != nullptr) master[i] = w;
    param[i] = E::store(w);
  }
}

void adamw(const xhal_op_call* c) {
  const kernels::AdamWUpdate k = adamw_update_of(c);
  with_element(c->dtype, [&]<class E>() {
    using S = typename E::Storage;
    adamw_by_ranges(c, [&](const kernels::AdamWBuffers& b, int64_t i0, int64_t i1) {
      adamw_range<E>(static_cast<S*>(b.param), static_cast<const S*>(b.grad), b.m, b.v, b.master, i0, i1, k);
    });
  });
}

// The sum of squares of g[i0, i1) in f32: four vector accumulators over groups of four vectors,
// then the rest of the vectors into the first, then the tail.
template <class E>
float sum_squares_range(const typename E::Storage* g, int64_t i0, int64_t i1) {
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df));
  auto a0 = hn::Zero(df), a1 = hn::Zero(df), a2 = hn::Zero(df), a3 = hn::Zero(df);
  int64_t i = i0;
  for (; i + 4 * lanes <= i1; i += 4 * lanes) {
    const auto x0 = load_f32<E>(g + i), x1 = load_f32<E>(g + i + lanes);
    const auto x2 = load_f32<E>(g + i + 2 * lanes), x3 = load_f32<E>(g + i + 3 * lanes);
    a0 = hn::MulAdd(x0, x0, a0), a1 = hn::MulAdd(x1, x1, a1), a2 = hn::MulAdd(x2, x2, a2), a3 = hn::MulAdd(x3, x3, a3);
  }
  for (; i + lanes <= i1; i += lanes) {
    const auto x = load_f32<E>(g + i);
    a0 = hn::MulAdd(x, x, a0);
  }
  float sum = hn::GetLane(hn::SumOfLanes(df, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
  for (; i < i1; ++i) sum += E::load(g[i]) * E::load(g[i]);
  return sum;
}

void grad_norm(const xhal_op_call* c) {
  with_element(c->dtype, [&]<class E>() {
    grad_norm_by_chunks(c, [&](const void* g, int64_t i0, int64_t i1) {
      return sum_squares_range<E>(static_cast<const typename E::Storage*>(g), i0, i1);
    });
  });
}

}  // namespace xhal::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace xhal::cpu {

HWY_EXPORT(adamw);
HWY_EXPORT(grad_norm);

namespace {
template <class E>
struct AdamWSimd {
  static xhal_status run(const xhal_op_call* c, char*, size_t) {
    HWY_DYNAMIC_DISPATCH(adamw)(c);
    return XHAL_OK;
  }
};

template <class E>
struct GradNormSimd {
  static xhal_status run(const xhal_op_call* c, char*, size_t) {
    HWY_DYNAMIC_DISPATCH(grad_norm)(c);
    return XHAL_OK;
  }
};
}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_fast_kernels<AdamWSimd>(host, "cpu.adamw_step_simd", XHAL_OP_ADAMW_STEP);
  register_fast_kernels<GradNormSimd>(host, "cpu.global_grad_norm_simd", XHAL_OP_GLOBAL_GRAD_NORM);
}

}  // namespace xhal::cpu
#endif

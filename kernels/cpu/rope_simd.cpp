// rope and rope_backward (the sines negated) with SIMD (Highway, best target picked at run time),
// in place on q and k, tokens in parallel. neox: the two halves as pairs of vectors (cos and sin
// put in the pairs' order once per token), a' = a cos - b sin, b' = b cos + a sin. gptj
// (interleaved pairs): per token, cos and +-sin are spread to the pair layout once
// ([c0 c0 c1 c1 ...], [-s0 s0 -s1 s1 ...]), then x' = x * c + swap_pairs(x) * s for every head.
// Registered above the portable reference kernel of rope.cpp.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/rope_simd.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <utility>

#include "kernels/cpu/kernel_registration.hpp"
#include "kernels/cpu/rope_positions.hpp"
#include "kernels/cpu/scratch.hpp"
#include "kernels/cpu/simd_element-inl.h"
#include "kernels/cpu/tensor_ref.hpp"

HWY_BEFORE_NAMESPACE();
namespace xhal::cpu::HWY_NAMESPACE {

// cos and sin: the token's rows as to_pair_order<E> left them (whole pairs of vectors in
// load2_f32<E>'s order, the rest in place), so the pairs of q and k need no reordering.
template <class E, NaNs kNaNs>
void rotate_neox(typename E::Storage* x, const float* cos, const float* sin, int64_t half) {
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df));
  int64_t i = 0;
  for (; i + 2 * lanes <= half; i += 2 * lanes) {
    VF a[2], b[2];
    load2_f32<E>(x + i, a[0], a[1]), load2_f32<E>(x + i + half, b[0], b[1]);
    VF lo[2], hi[2];
    for (int k = 0; k < 2; ++k) {
      const auto c = hn::LoadU(df, cos + i + k * lanes), s = hn::LoadU(df, sin + i + k * lanes);
      lo[k] = hn::NegMulAdd(b[k], s, hn::Mul(a[k], c));
      hi[k] = hn::MulAdd(a[k], s, hn::Mul(b[k], c));
    }
    store2_f32<E, false, kNaNs>(lo[0], lo[1], x + i);
    store2_f32<E, false, kNaNs>(hi[0], hi[1], x + i + half);
  }
  for (; i + lanes <= half; i += lanes) {
    const auto a = load_f32<E>(x + i), b = load_f32<E>(x + i + half);
    const auto c = hn::LoadU(df, cos + i), s = hn::LoadU(df, sin + i);
    store_f32<E, false, kNaNs>(hn::NegMulAdd(b, s, hn::Mul(a, c)), x + i);
    store_f32<E, false, kNaNs>(hn::MulAdd(a, s, hn::Mul(b, c)), x + i + half);
  }
  for (; i < half; ++i) {
    const float a = E::load(x[i]), b = E::load(x[i + half]);
    x[i] = E::store(a * cos[i] - b * sin[i]);
    x[i + half] = E::store(b * cos[i] + a * sin[i]);
  }
}

// Whether x[0..n) are all finite (x - x is 0 for them, NaN for infinities and NaNs).
HWY_INLINE bool all_finite(const float* x, int64_t n) {
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df));
  auto sum = hn::Zero(df);
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const VF v = hn::LoadU(df, x + i);
    sum = hn::Add(sum, hn::Sub(v, v));
  }
  float total = hn::GetLane(hn::SumOfLanes(df, sum));
  for (; i < n; ++i) total += x[i] - x[i];
  return total == 0.0f;
}

// cos_pairs / sin_pairs: 2 * half floats in the pair layout (see the file comment).
template <class E>
void rotate_gptj(typename E::Storage* x, const float* cos_pairs, const float* sin_pairs, int64_t half) {
  const int64_t n = 2 * half;
  int64_t i = 0;
#if HWY_TARGET != HWY_SCALAR
  const DF df;
  const int64_t lanes = int64_t(hn::Lanes(df));
  for (; i + lanes <= n; i += lanes) {
    const auto v = load_f32<E>(x + i);
    store_f32<E>(hn::MulAdd(hn::Shuffle2301(v), hn::LoadU(df, sin_pairs + i), hn::Mul(v, hn::LoadU(df, cos_pairs + i))),
                 x + i);
  }
#endif
  for (; i < n; i += 2) {
    const float a = E::load(x[i]), b = E::load(x[i + 1]);
    x[i] = E::store(a * cos_pairs[i] + b * sin_pairs[i]);
    x[i + 1] = E::store(b * cos_pairs[i + 1] + a * sin_pairs[i + 1]);
  }
}

// False when the allocator had no workspaces to give.
template <class E>
bool rope_typed(const xhal_op_call* c) {
  using S = typename E::Storage;
  const TensorRef<S> q(c->tensors[XHAL_ROPE_Q]), k(c->tensors[XHAL_ROPE_K]);
  const TensorRef<const float> cache(c->tensors[XHAL_ROPE_COS_SIN_CACHE]);
  const DLTensor* positions = c->tensors[XHAL_ROPE_POSITIONS];
  const int64_t tokens = q.size(0), half = cache.size(1) / 2;
  const bool neox = kernels::op_params<xhal_rope_op_params>(c).style == XHAL_ROPE_NEOX;
  const float sin_sign = c->op == XHAL_OP_ROPE_BACKWARD ? -1.0f : 1.0f;  // rope_backward: the inverse
  // Each thread's cos and sin row in the order the rotation reads them.
  const auto pairs = [&](Carver& carver) {
    return std::pair{carver.take<float>(2, half), carver.take<float>(2, half)};
  };
  Carver size;
  pairs(size);
  const ThreadWorkspaces workspaces(c, size.bytes(), tokens);
  if (!workspaces.ok()) return false;
#pragma omp parallel num_threads(workspaces.threads())
  {
    Carver carver(workspaces.of_this_thread());
    const auto [cos_pairs, sin_pairs] = pairs(carver);
#pragma omp for schedule(static)
    for (int64_t t = 0; t < tokens; ++t) {
      const float* cs = cache.at(index_at(positions, t), 0);
      if (neox) {
        to_pair_order<E>(cs, cos_pairs, half), to_pair_order<E>(cs + half, sin_pairs, half);
        if (sin_sign < 0) {
          for (int64_t i = 0; i < half; ++i) sin_pairs[i] = -sin_pairs[i];
        }
        // A finite row lets bf16 be rounded without a NaN test; a cache row may hold any float
        // (NaNs whose low bits are set too).
        const auto rotate = all_finite(cs, 2 * half) ? rotate_neox<E, NaNs::from_bf16> : rotate_neox<E, NaNs::any>;
        for (int64_t h = 0; h < q.size(1); ++h) rotate(q.at(t, h, 0), cos_pairs, sin_pairs, half);
        for (int64_t h = 0; h < k.size(1); ++h) rotate(k.at(t, h, 0), cos_pairs, sin_pairs, half);
        continue;
      }
      for (int64_t i = 0; i < half; ++i) {
        cos_pairs[2 * i] = cos_pairs[2 * i + 1] = cs[i];
        sin_pairs[2 * i] = -sin_sign * cs[half + i];
        sin_pairs[2 * i + 1] = sin_sign * cs[half + i];
      }
      for (int64_t h = 0; h < q.size(1); ++h) rotate_gptj<E>(q.at(t, h, 0), cos_pairs, sin_pairs, half);
      for (int64_t h = 0; h < k.size(1); ++h) rotate_gptj<E>(k.at(t, h, 0), cos_pairs, sin_pairs, half);
    }
  }
  return true;
}

bool rope(const xhal_op_call* c) {
  bool ok = false;
  with_element(c->dtype, [&]<class E>() { ok = rope_typed<E>(c); });
  return ok;
}

}  // namespace xhal::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace xhal::cpu {

HWY_EXPORT(rope);

namespace {
template <class E>
struct RopeSimd {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    if (const xhal_status s = check_rope_positions(c, msg, len); s != XHAL_OK) return s;
    if (HWY_DYNAMIC_DISPATCH(rope)(c)) return XHAL_OK;
    return workspaces_refused(msg, len, "rope");
  }
};
}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_fast_kernels<RopeSimd>(host, "cpu.rope_simd", XHAL_OP_ROPE);
  register_fast_kernels<RopeSimd>(host, "cpu.rope_backward_simd", XHAL_OP_ROPE_BACKWARD);
}

}  // namespace xhal::cpu
#endif

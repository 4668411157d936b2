// Front ends of rope, rope_backward and rope_cache. Positions live in device memory; kernels check they are below
// max_pos where that is cheap (the CPU backend checks each), see docs/ops.md.
#include <algorithm>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "ops/arg_checks.hpp"
#include "ops/op_call.hpp"
#include "xhal/error.hpp"
#include "xhal/ops.hpp"

namespace xhal::ops {

namespace {

// rope and rope_backward: the same arguments at the same slots, rotated by opposite angles.
void rotate(Op op, const TensorView& q, const TensorView& k, const TensorView& positions,
            const TensorView& cos_sin_cache, RopeStyle style, const Stream* stream) {
  static_assert(XHAL_ROPE_Q == XHAL_ROPE_BACKWARD_DQ && XHAL_ROPE_K == XHAL_ROPE_BACKWARD_DK &&
                XHAL_ROPE_POSITIONS == XHAL_ROPE_BACKWARD_POSITIONS &&
                XHAL_ROPE_COS_SIN_CACHE == XHAL_ROPE_BACKWARD_COS_SIN_CACHE);
  const ArgChecks check(op);
  check.tensor(XHAL_ROPE_Q, q, 3);
  check.float_dtype(XHAL_ROPE_Q, q);
  const int64_t T = q.size(0), D = q.size(2);
  check.tensor(XHAL_ROPE_K, k, 3);
  check.dtype(XHAL_ROPE_K, k, q.dtype(), " (same as q)");
  check.dim(XHAL_ROPE_K, k, 0, T, "tokens of q");
  check.dim(XHAL_ROPE_K, k, 2, D, "head dim of q");
  check.tensor(XHAL_ROPE_POSITIONS, positions, 1, false);
  check.dtype_in(XHAL_ROPE_POSITIONS, positions, {DType::i32, DType::i64});
  check.dim(XHAL_ROPE_POSITIONS, positions, 0, T, "tokens of q");
  check.tensor(XHAL_ROPE_COS_SIN_CACHE, cos_sin_cache, 2);
  check.dtype(XHAL_ROPE_COS_SIN_CACHE, cos_sin_cache, DType::f32, " (from rope_cache)");
  const int64_t rotary_dim = cos_sin_cache.size(1);
  if (rotary_dim < 2 || rotary_dim % 2 != 0 || rotary_dim > D) {
    check.fail(XHAL_ROPE_COS_SIN_CACHE, fmt::format("an even rotary_dim (dim 1) in 2..{} (head dim)", D),
               fmt::format("{}", rotary_dim));
  }
  const Device device = q.device();
  for (auto [name, t] :
       {std::pair{XHAL_ROPE_K, &k}, {XHAL_ROPE_POSITIONS, &positions}, {XHAL_ROPE_COS_SIN_CACHE, &cos_sin_cache}}) {
    check.same_device(name, *t, device, XHAL_ROPE_Q);
  }
  // Both are written in place; the others are read meanwhile.
  check.apart(XHAL_ROPE_Q, q,
              {{XHAL_ROPE_K, &k}, {XHAL_ROPE_POSITIONS, &positions}, {XHAL_ROPE_COS_SIN_CACHE, &cos_sin_cache}});
  check.apart(XHAL_ROPE_K, k, {{XHAL_ROPE_POSITIONS, &positions}, {XHAL_ROPE_COS_SIN_CACHE, &cos_sin_cache}});
  OpCall call(op, q.dtype(), device, stream);
  const xhal_rope_op_params op_params{sizeof op_params, style == RopeStyle::neox ? XHAL_ROPE_NEOX : XHAL_ROPE_GPTJ};
  call.set_params(op_params);
  call.set(XHAL_ROPE_Q, q);
  call.set(XHAL_ROPE_K, k);
  call.set(XHAL_ROPE_POSITIONS, positions);
  call.set(XHAL_ROPE_COS_SIN_CACHE, cos_sin_cache);
  call.run();
}

}  // namespace

void rope(const TensorView& q, const TensorView& k, const TensorView& positions, const TensorView& cos_sin_cache,
          RopeStyle style, const Stream* stream) {
  rotate(Op::rope, q, k, positions, cos_sin_cache, style, stream);
}

void rope_backward(const TensorView& dq, const TensorView& dk, const TensorView& positions,
                   const TensorView& cos_sin_cache, RopeStyle style, const Stream* stream) {
  rotate(Op::rope_backward, dq, dk, positions, cos_sin_cache, style, stream);
}

Tensor rope_cache(int64_t max_pos, int64_t rotary_dim, double theta, Device device) {
  auto fail = [](std::string_view arg, std::string_view expected, std::string got) {
    throw Error(Errc::invalid_argument, fmt::format("xhal::ops::rope_cache: argument '{}': expected "
                                                    "{}, got {}",
                                                    arg, expected, got));
  };
  if (max_pos < 0) fail("max_pos", ">= 0", fmt::format("{}", max_pos));
  if (rotary_dim < 2 || rotary_dim % 2 != 0) fail("rotary_dim", "an even number >= 2", fmt::format("{}", rotary_dim));
  if (!(theta > 0) || !std::isfinite(theta)) fail("theta", "a finite number > 0", fmt::format("{}", theta));
  if (int64_t bytes = 0; __builtin_mul_overflow(max_pos, rotary_dim * int64_t(sizeof(float)), &bytes)) {
    fail("max_pos", "a cache of max_pos x rotary_dim floats whose bytes fit in 64 bits",
         fmt::format("{} x {}", max_pos, rotary_dim));
  }
  // The device's allocator first: a size it cannot hold is its clear out_of_memory (and counts
  // against XHAL_MEMORY_LIMIT) before any host memory of that size is asked for.
  Tensor out = Tensor::empty({max_pos, rotary_dim}, DType::f32, device);
  // Computed on the host in double (once per model), a block of positions at a time, each copied
  // to its rows of the device's tensor.
  constexpr int64_t kBlockPositions = 4096;
  const int64_t half = rotary_dim / 2;
  std::vector<float> host(static_cast<size_t>(std::min(max_pos, kBlockPositions) * rotary_dim));
  for (int64_t p0 = 0; p0 < max_pos; p0 += kBlockPositions) {
    const int64_t n = std::min(kBlockPositions, max_pos - p0);
    for (int64_t i = 0; i < half; ++i) {
      const double inv_freq = std::pow(theta, -2.0 * double(i) / double(rotary_dim));
      for (int64_t p = 0; p < n; ++p) {
        host[size_t(p * rotary_dim + i)] = static_cast<float>(std::cos(double(p0 + p) * inv_freq));
        host[size_t(p * rotary_dim + half + i)] = static_cast<float>(std::sin(double(p0 + p) * inv_freq));
      }
    }
    copy(TensorView(static_cast<float*>(out.data()) + p0 * rotary_dim, DType::f32, {n, rotary_dim}, device),
         TensorView(host.data(), DType::f32, {n, rotary_dim}));
  }
  return out;
}

}  // namespace xhal::ops

// Front ends of rope, rope_backward and rope_cache. Positions live in device memory; kernels check they are below
// max_pos where that is cheap (the CPU backend checks each), see docs/ops.md.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/text_format.hpp"
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
    check.fail(XHAL_ROPE_COS_SIN_CACHE, format_text("an even rotary_dim (dim 1) in 2..{} (head dim)", D),
               format_text("{}", rotary_dim));
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

namespace {

[[noreturn]] void rope_cache_fail(std::string_view arg, std::string_view expected, const std::string& got) {
  throw Error(Errc::invalid_argument,
              format_text("xhal::ops::rope_cache: argument '{}': expected {}, got {}", arg, expected, got));
}

void check_scaling(const RopeScaling& s) {
  using Type = RopeScaling::Type;
  if (s.type == Type::none) return;
  if (s.type != Type::linear && s.type != Type::llama3 && s.type != Type::yarn) {
    rope_cache_fail("scaling.type", "none, linear, llama3 or yarn", format_text("{}", int(s.type)));
  }
  if (!(s.factor > 0) || !std::isfinite(s.factor)) {
    rope_cache_fail("scaling.factor", "a finite number > 0", format_text("{}", s.factor));
  }
  if (s.type == Type::linear) return;
  if (s.original_max_position <= 0) {
    rope_cache_fail("scaling.original_max_position", "> 0", format_text("{}", s.original_max_position));
  }
  if (s.type == Type::llama3 &&
      !(s.low_freq_factor > 0 && s.high_freq_factor > s.low_freq_factor && std::isfinite(s.high_freq_factor))) {
    rope_cache_fail("scaling.high_freq_factor", "finite and > low_freq_factor > 0",
                    format_text("{} and {}", s.high_freq_factor, s.low_freq_factor));
  }
  if (s.type == Type::yarn) {
    if (!(s.beta_fast > s.beta_slow && s.beta_slow > 0) || !std::isfinite(s.beta_fast)) {
      rope_cache_fail("scaling.beta_fast", "finite and > beta_slow > 0",
                      format_text("{} and {}", s.beta_fast, s.beta_slow));
    }
    if (!(s.attention_factor >= 0) || !std::isfinite(s.attention_factor)) {
      rope_cache_fail("scaling.attention_factor", "a finite number >= 0 (0: the default)",
                      format_text("{}", s.attention_factor));
    }
  }
}

// The frequencies f_i (i < rotary_dim / 2) under the scaling, and the factor cos and sin are
// multiplied by.
struct RopeFrequencies {
  std::vector<double> f;
  double magnitude = 1.0;
};

RopeFrequencies rope_frequencies(int64_t rotary_dim, double theta, const RopeScaling& s) {
  using Type = RopeScaling::Type;
  const int64_t half = rotary_dim / 2;
  RopeFrequencies r;
  r.f.resize(size_t(half));
  for (int64_t i = 0; i < half; ++i) r.f[size_t(i)] = std::pow(theta, -2.0 * double(i) / double(rotary_dim));
  constexpr double kTwoPi = 6.283185307179586;
  switch (s.type) {
    case Type::none: break;
    case Type::linear:  // positions divided by factor
      for (double& f : r.f) f /= s.factor;
      break;
    case Type::llama3: {
      // Wavelengths shorter than original / high_freq_factor keep f, longer than original /
      // low_freq_factor take f / factor, and those between a blend linear in original / wavelength.
      const double original = double(s.original_max_position);
      const double short_wavelength = original / s.high_freq_factor, long_wavelength = original / s.low_freq_factor;
      for (double& f : r.f) {
        const double wavelength = kTwoPi / f;
        if (wavelength > long_wavelength) {
          f /= s.factor;
        } else if (wavelength >= short_wavelength) {
          const double smooth = (original / wavelength - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
          f = (1.0 - smooth) * f / s.factor + smooth * f;
        }
      }
      break;
    }
    case Type::yarn: {
      // The dimension whose frequency turns `rotations` times over the original context, as a real
      // number; dimensions below round(beta_fast's) keep f, above beta_slow's take f / factor, and
      // a linear ramp blends those between.
      const double original = double(s.original_max_position);
      auto dimension_of = [&](double rotations) {
        return double(rotary_dim) * std::log(original / (rotations * kTwoPi)) / (2.0 * std::log(theta));
      };
      double low = std::max(std::floor(dimension_of(s.beta_fast)), 0.0);
      double high = std::min(std::ceil(dimension_of(s.beta_slow)), double(rotary_dim - 1));
      if (low == high) high += 0.001;  // no division by zero in the ramp
      for (int64_t i = 0; i < half; ++i) {
        const double ramp = std::clamp((double(i) - low) / (high - low), 0.0, 1.0);
        double& f = r.f[size_t(i)];
        f = f / s.factor * ramp + f * (1.0 - ramp);
      }
      r.magnitude = s.attention_factor > 0 ? s.attention_factor : s.factor <= 1 ? 1.0 : 0.1 * std::log(s.factor) + 1.0;
      break;
    }
  }
  return r;
}

}  // namespace

Tensor rope_cache(int64_t max_pos, int64_t rotary_dim, double theta, Device device) {
  return rope_cache(max_pos, rotary_dim, theta, RopeScaling{}, device);
}

Tensor rope_cache(int64_t max_pos, int64_t rotary_dim, double theta, const RopeScaling& scaling, Device device) {
  if (max_pos < 0) rope_cache_fail("max_pos", ">= 0", format_text("{}", max_pos));
  if (rotary_dim < 2 || rotary_dim % 2 != 0) {
    rope_cache_fail("rotary_dim", "an even number >= 2", format_text("{}", rotary_dim));
  }
  if (!(theta > 0) || !std::isfinite(theta)) rope_cache_fail("theta", "a finite number > 0", format_text("{}", theta));
  if (int64_t bytes = 0; __builtin_mul_overflow(max_pos, rotary_dim * int64_t(sizeof(float)), &bytes)) {
    rope_cache_fail("max_pos", "a cache of max_pos x rotary_dim floats whose bytes fit in 64 bits",
                    format_text("{} x {}", max_pos, rotary_dim));
  }
  check_scaling(scaling);
  // The device's allocator first: a size it cannot hold is its clear out_of_memory (and counts
  // against XHAL_MEMORY_LIMIT) before any host memory of that size is asked for.
  Tensor out = Tensor::empty({max_pos, rotary_dim}, DType::f32, device);
  // Computed on the host in double (once per model), a block of positions at a time, each copied
  // to its rows of the device's tensor.
  constexpr int64_t kBlockPositions = 4096;
  const int64_t half = rotary_dim / 2;
  const RopeFrequencies freq = rope_frequencies(rotary_dim, theta, scaling);
  std::vector<float> host(static_cast<size_t>(std::min(max_pos, kBlockPositions) * rotary_dim));
  for (int64_t p0 = 0; p0 < max_pos; p0 += kBlockPositions) {
    const int64_t n = std::min(kBlockPositions, max_pos - p0);
    for (int64_t i = 0; i < half; ++i) {
      for (int64_t p = 0; p < n; ++p) {
        const double angle = double(p0 + p) * freq.f[size_t(i)];
        host[size_t(p * rotary_dim + i)] = static_cast<float>(freq.magnitude * std::cos(angle));
        host[size_t(p * rotary_dim + half + i)] = static_cast<float>(freq.magnitude * std::sin(angle));
      }
    }
    copy(TensorView(static_cast<float*>(out.data()) + p0 * rotary_dim, DType::f32, {n, rotary_dim}, device),
         TensorView(host.data(), DType::f32, {n, rotary_dim}));
  }
  return out;
}

}  // namespace xhal::ops

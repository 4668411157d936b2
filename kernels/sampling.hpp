// sample's arithmetic, which every backend runs as the same float and integer operations so that
// a row gives the same token everywhere (docs/ops.md, sample). Weights are exp((x - max) / T) from
// a polynomial written out here (libraries' expf differ in the last bits), turned into integers of
// 40 fractional bits: sums of them do not depend on the order of the additions, so the top-p
// threshold and the draw do not depend on how a backend splits a row. The random number is
// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", 2011).
#pragma once

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/kernel_registration.hpp"
#include "kernels/order_key.hpp"

namespace xhal::kernels {

// exp(d) for d <= 0: 2^n e^r with n = round(d / ln 2) and e^r from its Taylor polynomial of degree
// 7 (|r| <= ln 2 / 2: under 1e-8 relative). Below -32 the weight is under the integers' resolution
// and is 0 (so is -inf).
XHAL_HOST_DEVICE inline float sample_exp(float d) {
  if (!(d > -32.0f)) return 0.0f;
  const float n = rintf(d * 1.44269504f);
  float r = fmaf(n, -0.693145752f, d);  // ln 2 in two parts: the first times n is exact
  r = fmaf(n, -1.42860677e-6f, r);
  float p = 1.0f / 5040.0f;
  p = fmaf(p, r, 1.0f / 720.0f);
  p = fmaf(p, r, 1.0f / 120.0f);
  p = fmaf(p, r, 1.0f / 24.0f);
  p = fmaf(p, r, 1.0f / 6.0f);
  p = fmaf(p, r, 0.5f);
  p = fmaf(p, r, 1.0f);
  p = fmaf(p, r, 1.0f);
  const int e = int(n) + 127;  // n >= -47: 2^n is a normal float
  uint32_t scale_bits = uint32_t(e) << 23;
  float scale;
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  scale = __uint_as_float(scale_bits);
#else
  memcpy(&scale, &scale_bits, sizeof scale);
#endif
  return p * scale;
}

// A token's weight: exp((x - max) / temperature) in units of 2^-40, at most 2^40 (the largest
// logit's). A row of at most XHAL_SAMPLE_MAX_VOCABULARY tokens sums to under 2^64.
constexpr int kSampleWeightBits = 40;
static_assert(XHAL_SAMPLE_MAX_VOCABULARY < (int64_t(1) << (64 - kSampleWeightBits)));
XHAL_HOST_DEVICE inline uint64_t sample_weight(float x, float max, float temperature) {
  return uint64_t(sample_exp((x - max) / temperature) * 1099511627776.0f);  // 2^40: exact
}

XHAL_HOST_DEVICE inline uint64_t mul_high64(uint64_t a, uint64_t b) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __umul64hi(a, b);
#else
  return uint64_t((static_cast<unsigned __int128>(a) * b) >> 64);
#endif
}

// Philox4x32-10 of a 128-bit counter under a 64-bit key.
struct Philox128 {
  uint32_t w[4];
};
XHAL_HOST_DEVICE inline Philox128 philox4x32_10(Philox128 c, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t(0xD2511F53u) * c.w[0], p1 = uint64_t(0xCD9E8D57u) * c.w[2];
    c = {{uint32_t(p1 >> 32) ^ c.w[1] ^ k0, uint32_t(p1), uint32_t(p0 >> 32) ^ c.w[3] ^ k1, uint32_t(p0)}};
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return c;
}

// A row's 64 random bits: key = seed, counter = (step, stream), stream the row's index when the
// rows share one seed (without per-row seeds) and 0 with them.
XHAL_HOST_DEVICE inline uint64_t sample_random64(uint64_t seed, uint64_t step, uint64_t stream) {
  const Philox128 r = philox4x32_10({{uint32_t(step), uint32_t(step >> 32), uint32_t(stream), uint32_t(stream >> 32)}},
                                    uint32_t(seed), uint32_t(seed >> 32));
  return uint64_t(r.w[0]) | uint64_t(r.w[1]) << 32;
}

// One row's settings, every value of the per-row tensors given a meaning (a backend that cannot
// check device memory cheaply reads them as they are): temperature <= 0 or NaN is greedy, top_k
// outside [1, V) and top_p >= 1 or NaN are off, min_p <= 0 or NaN is off and above 1 is 1.
struct SampleRow {
  bool greedy;
  float temperature;
  int64_t top_k;  // 0: off
  float top_p;  // >= 1: off
  uint64_t min_weight;  // tokens below it are dropped (min-p); 0: off
  uint64_t seed, step, stream;
};

// The call's settings: the scalars and the per-row tensors' data (null where absent), read on
// whatever processor runs the kernel.
struct SampleArgs {
  xhal_sample_op_params scalars;
  const float* temperature;
  const int32_t* top_k;
  const float* top_p;
  const float* min_p;
  const int64_t* seeds;
  const int64_t* steps;

  XHAL_HOST_DEVICE SampleRow row(int64_t r, int64_t vocabulary) const {
    SampleRow s;
    s.temperature = temperature != nullptr ? temperature[r] : scalars.temperature;
    s.greedy = !(s.temperature > 0.0f);
    const int64_t k = top_k != nullptr ? int64_t(top_k[r]) : scalars.top_k;
    s.top_k = k >= 1 && k < vocabulary ? k : 0;
    const float p = top_p != nullptr ? top_p[r] : scalars.top_p;
    s.top_p = p < 1.0f ? p : 1.0f;
    float m = min_p != nullptr ? min_p[r] : scalars.min_p;
    m = m > 0.0f ? (m < 1.0f ? m : 1.0f) : 0.0f;
    s.min_weight = uint64_t(ceil(double(m) * 1099511627776.0));  // 2^40 m: exact in double
    s.seed = seeds != nullptr ? uint64_t(seeds[r]) : scalars.seed;
    s.step = steps != nullptr ? uint64_t(steps[r]) : scalars.step;
    s.stream = seeds != nullptr ? 0 : uint64_t(r);
    return s;
  }
};

inline SampleArgs sample_args(const xhal_op_call* c) {
  auto data = [&](int slot) -> const void* {
    const DLTensor* t = tensor_at(c, slot);
    return t != nullptr ? t->data : nullptr;
  };
  return {op_params<xhal_sample_op_params>(c),
          static_cast<const float*>(data(XHAL_SAMPLE_TEMPERATURE)),
          static_cast<const int32_t*>(data(XHAL_SAMPLE_TOP_K)),
          static_cast<const float*>(data(XHAL_SAMPLE_TOP_P)),
          static_cast<const float*>(data(XHAL_SAMPLE_MIN_P)),
          static_cast<const int64_t*>(data(XHAL_SAMPLE_SEEDS)),
          static_cast<const int64_t*>(data(XHAL_SAMPLE_STEPS))};
}

// Top-p's mass: the kept set is the fewest largest logits whose weights reach ceil(top_p * S), S
// the weights of the tokens top-k kept (at least the largest token, even for top_p <= 0).
XHAL_HOST_DEVICE inline uint64_t top_p_target(float top_p, uint64_t total) {
  const double t = ceil(double(top_p) * double(total));
  if (!(t >= 1.0)) return 1;
  return t >= double(total) ? total : uint64_t(t);
}

// The drawn position within kept weights summing to `total`: floor(random * total / 2^64).
XHAL_HOST_DEVICE inline uint64_t sample_point(const SampleRow& s, uint64_t total) {
  return mul_high64(sample_random64(s.seed, s.step, s.stream), total);
}

}  // namespace xhal::kernels

// rope on the CPU, in place on q and k: tokens in parallel. Positions are checked against the
// cache before anything is written.
#include "element.hpp"
#include "kernel_registration.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {
namespace {

template <class E>
struct RopeKernel {
  using S = typename E::Storage;

  static int64_t position(const DLTensor* positions, int64_t t) {
    const int64_t stride = positions->strides[0];
    if (positions->dtype.bits == 32) return static_cast<const int32_t*>(positions->data)[t * stride];
    return static_cast<const int64_t*>(positions->data)[t * stride];
  }

  // Rotates the first rotary_dim features of one head.
  static void rotate(S* x, const float* cos, const float* sin, int64_t half, bool neox) {
    for (int64_t i = 0; i < half; ++i) {
      S* pa = neox ? x + i : x + 2 * i;
      S* pb = neox ? x + i + half : x + 2 * i + 1;
      const float a = E::load(*pa), b = E::load(*pb);
      *pa = E::store(a * cos[i] - b * sin[i]);
      *pb = E::store(b * cos[i] + a * sin[i]);
    }
  }

  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    const TensorRef<S> q(c->t[XHAL_SLOT_ROPE_Q]), k(c->t[XHAL_SLOT_ROPE_K]);
    const TensorRef<const float> cache(c->t[XHAL_SLOT_COS_SIN]);
    const DLTensor* positions = c->t[XHAL_SLOT_POSITIONS];
    const int64_t T = q.size(0), max_pos = cache.size(0), half = cache.size(1) / 2;
    for (int64_t t = 0; t < T; ++t) {
      const int64_t p = position(positions, t);
      if (p < 0 || p >= max_pos) {
        return kernel_error(msg, len, XHAL_ERR_INVALID_ARGUMENT,
                            "argument 'positions': expected 0..%lld (rows of cos_sin_cache), got "
                            "positions[%lld] = %lld",
                            (long long)(max_pos - 1), (long long)t, (long long)p);
      }
    }
    const bool neox = c->params.rope_neox != 0;
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < T; ++t) {
      const float* cs = cache.at(position(positions, t), 0);
      for (int64_t h = 0; h < q.size(1); ++h) rotate(q.at(t, h, 0), cs, cs + half, half, neox);
      for (int64_t h = 0; h < k.size(1); ++h) rotate(k.at(t, h, 0), cs, cs + half, half, neox);
    }
    return XHAL_OK;
  }
};

}  // namespace

void register_rope_kernels(const xhal_host_api* host) {
  register_float_kernels<RopeKernel>(host, "cpu.rope", XHAL_OP_ROPE);
}

}  // namespace xhal::cpu

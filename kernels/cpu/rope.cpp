// rope and rope_backward (the inverse rotation: the sines negated) on the CPU, in place on q and k:
// tokens in parallel. Positions are checked against the
// cache before anything is written.
#include "element.hpp"
#include "kernel_registration.hpp"
#include "rope_positions.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {
namespace {

template <class E>
struct RopeKernel {
  using S = typename E::Storage;

  // Rotates the first rotary_dim features of one head.
  static void rotate(S* x, const float* cos, const float* sin, float sin_sign, int64_t half, bool neox) {
    for (int64_t i = 0; i < half; ++i) {
      S* pa = neox ? x + i : x + 2 * i;
      S* pb = neox ? x + i + half : x + 2 * i + 1;
      const float a = E::load(*pa), b = E::load(*pb);
      const float s = sin_sign * sin[i];
      *pa = E::store(a * cos[i] - b * s);
      *pb = E::store(b * cos[i] + a * s);
    }
  }

  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    const TensorRef<S> q(c->tensors[XHAL_ROPE_Q]), k(c->tensors[XHAL_ROPE_K]);
    const TensorRef<const float> cache(c->tensors[XHAL_ROPE_COS_SIN_CACHE]);
    const DLTensor* positions = c->tensors[XHAL_ROPE_POSITIONS];
    const int64_t T = q.size(0), half = cache.size(1) / 2;
    if (const xhal_status s = check_rope_positions(c, msg, len); s != XHAL_OK) return s;
    const bool neox = kernels::op_params<xhal_rope_op_params>(c).style == XHAL_ROPE_NEOX;
    const float sin_sign = c->op == XHAL_OP_ROPE_BACKWARD ? -1.0f : 1.0f;  // the inverse rotation
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < T; ++t) {
      const float* cs = cache.at(index_at(positions, t), 0);
      for (int64_t h = 0; h < q.size(1); ++h) rotate(q.at(t, h, 0), cs, cs + half, sin_sign, half, neox);
      for (int64_t h = 0; h < k.size(1); ++h) rotate(k.at(t, h, 0), cs, cs + half, sin_sign, half, neox);
    }
    return XHAL_OK;
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<RopeKernel>(host, "cpu.rope", XHAL_OP_ROPE);
  register_float_kernels<RopeKernel>(host, "cpu.rope_backward", XHAL_OP_ROPE_BACKWARD);
}

}  // namespace xhal::cpu

// rope and rope_backward (the same rotation with the sines negated) on the GPU, in place on q and k. With aligned rows each thread rotates 8 elements per
// 16-byte access (neox: 8 pairs across the two halves; gptj: 4 adjacent pairs) in a flat loop over
// all (token, head, chunk); otherwise one pair per thread with scalar accesses. Positions outside
// the cache leave their token unrotated (checked without a host round trip; see docs/ops.md).
#include "launch.cuh"

namespace xhal::gpu {
namespace {

template <class E>
__device__ void rotate_heads(typename E::T* x, int64_t heads, int64_t head_stride, int64_t half, bool neox,
                             float sin_sign, const float* cs) {
  for (int64_t w = threadIdx.x; w < heads * half; w += blockDim.x) {
    const int64_t h = w / half, i = w % half;
    typename E::T* p = x + h * head_stride;
    const int64_t ia = neox ? i : 2 * i, ib = neox ? i + half : 2 * i + 1;
    const float a = E::load(p[ia]), b = E::load(p[ib]);
    const float c = cs[i], s = sin_sign * cs[half + i];
    p[ia] = E::store(a * c - b * s);
    p[ib] = E::store(b * c + a * s);
  }
}

struct RopeArgs {
  int64_t tokens, q_heads, k_heads;
  int64_t q_token_stride, q_head_stride, k_token_stride, k_head_stride;
  int64_t pos_stride, max_pos, cache_stride, half;
  bool neox, pos64;
  float sin_sign;  // 1: rope; -1: rope_backward, the inverse rotation
};

// Vector path: a flat grid-stride loop over (token, head of q then k, 16-byte chunk), so every
// thread of every block has work whatever the head counts. Each thread takes two items per step
// and issues both items' loads before computing (stores of one item could alias the other's
// loads, so the compiler would not overlap them by itself). Index is uint32_t when the item count
// fits: 32-bit divisions cost a fraction of 64-bit ones.
template <class E, class Index>
__global__ void rope_vec_kernel(typename E::T* q, typename E::T* k, const void* positions, const float* cache,
                                RopeArgs a) {
  using T = typename E::T;
  const Index chunks = Index(a.neox ? a.half / 8 : 2 * a.half / 8);
  const Index per_token = Index(a.q_heads + a.k_heads) * chunks;
  const Index total = Index(a.tokens) * per_token;
  const Index stride = Index(gridDim.x) * blockDim.x;
  struct Item {
    T* p = nullptr;
    const float* cs = nullptr;
    int i0 = 0;
    Vec<E> x, y;  // neox: the two halves; gptj: x only
  };
  auto locate = [&](Index w, Item& it) {
    const Index t = w / per_token, rem = w % per_token, h = rem / chunks, ch = rem % chunks;
    const int64_t pos = a.pos64 ? static_cast<const int64_t*>(positions)[int64_t(t) * a.pos_stride]
                                : static_cast<const int32_t*>(positions)[int64_t(t) * a.pos_stride];
    if (pos < 0 || pos >= a.max_pos) return;
    T* head = h < Index(a.q_heads)
                  ? q + int64_t(t) * a.q_token_stride + int64_t(h) * a.q_head_stride
                  : k + int64_t(t) * a.k_token_stride + int64_t(h - Index(a.q_heads)) * a.k_head_stride;
    it.p = head + int64_t(ch) * 8;
    it.cs = cache + pos * a.cache_stride;
    it.i0 = int(a.neox ? ch * 8 : ch * 4);
    it.x = Vec<E>::load_from(it.p);
    if (a.neox) it.y = Vec<E>::load_from(it.p + a.half);
  };
  auto rotate = [&](Item& it) {
    if (it.p == nullptr) return;
    if (a.neox) {
      Vec<E> ra, rb;
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        const float c = it.cs[it.i0 + e], s = a.sin_sign * it.cs[a.half + it.i0 + e];
        const float fa = E::load(it.x.v[e]), fb = E::load(it.y.v[e]);
        ra.v[e] = E::store(fa * c - fb * s);
        rb.v[e] = E::store(fb * c + fa * s);
      }
      ra.store_to(it.p);
      rb.store_to(it.p + a.half);
    } else {
      Vec<E> r;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float c = it.cs[it.i0 + e], s = a.sin_sign * it.cs[a.half + it.i0 + e];
        const float fa = E::load(it.x.v[2 * e]), fb = E::load(it.x.v[2 * e + 1]);
        r.v[2 * e] = E::store(fa * c - fb * s);
        r.v[2 * e + 1] = E::store(fb * c + fa * s);
      }
      r.store_to(it.p);
    }
  };
  for (Index w = Index(blockIdx.x) * blockDim.x + threadIdx.x; w < total; w += 2 * stride) {
    Item first, second;
    locate(w, first);
    if (w + stride < total) locate(w + stride, second);
    rotate(first);
    rotate(second);
  }
}

// Scalar path: blocks loop over tokens, threads over the (head, pair) of q and then of k.
template <class E>
__global__ void rope_kernel(typename E::T* q, typename E::T* k, const void* positions, const float* cache, RopeArgs a) {
  for (int64_t t = blockIdx.x; t < a.tokens; t += gridDim.x) {
    const int64_t p = a.pos64 ? static_cast<const int64_t*>(positions)[t * a.pos_stride]
                              : static_cast<const int32_t*>(positions)[t * a.pos_stride];
    if (p < 0 || p >= a.max_pos) continue;
    const float* cs = cache + p * a.cache_stride;
    rotate_heads<E>(q + t * a.q_token_stride, a.q_heads, a.q_head_stride, a.half, a.neox, a.sin_sign, cs);
    rotate_heads<E>(k + t * a.k_token_stride, a.k_heads, a.k_head_stride, a.half, a.neox, a.sin_sign, cs);
  }
}

template <class E>
struct RopeKernel {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    using T = typename E::T;
    const DLTensor* q = c->tensors[XHAL_ROPE_Q];
    const DLTensor* k = c->tensors[XHAL_ROPE_K];
    const DLTensor* pos = c->tensors[XHAL_ROPE_POSITIONS];
    const DLTensor* cache = c->tensors[XHAL_ROPE_COS_SIN_CACHE];
    const RopeArgs a{q->shape[0],           q->shape[1],
                     k->shape[1],           q->strides[0],
                     q->strides[1],         k->strides[0],
                     k->strides[1],         pos->strides[0],
                     cache->shape[0],       cache->strides[0],
                     cache->shape[1] / 2,   kernels::op_params<xhal_rope_op_params>(c).style == XHAL_ROPE_NEOX,
                     pos->dtype.bits == 64, c->op == XHAL_OP_ROPE_BACKWARD ? -1.0f : 1.0f};
    if (a.tokens == 0) return XHAL_OK;
    const int64_t pairs = (a.q_heads + a.k_heads) * a.half;
    const int threads = block_threads(pairs / 2, 512);
    // 16-byte accesses need 8-element chunks of the rotary half and aligned heads.
    bool vec = Vec<E>::kVec == 8 && a.half % 8 == 0;
    for (const DLTensor* t : {q, k}) {
      vec = vec && reinterpret_cast<uintptr_t>(t->data) % 16 == 0 && t->strides[0] % 8 == 0 && t->strides[1] % 8 == 0;
    }
    auto stream = static_cast<gpuStream_t>(c->stream);
    auto* qd = static_cast<T*>(q->data);
    auto* kd = static_cast<T*>(k->data);
    auto* cd = static_cast<const float*>(cache->data);
    if (vec) {
      const int64_t items = a.tokens * (a.q_heads + a.k_heads) * (a.neox ? a.half / 8 : a.half / 4);
      const int64_t waves = int64_t(multiprocessor_count(c->device)) * 8;
      const unsigned grid = grid_for(items, 256, waves);
      if (items + 2 * int64_t(grid) * 256 < (int64_t(1) << 32)) {
        rope_vec_kernel<E, uint32_t><<<grid, 256, 0, stream>>>(qd, kd, pos->data, cd, a);
      } else {
        rope_vec_kernel<E, int64_t><<<grid, 256, 0, stream>>>(qd, kd, pos->data, cd, a);
      }
    } else {
      rope_kernel<E><<<grid_for(a.tokens, 1, int64_t(1) << 20), threads, 0, stream>>>(qd, kd, pos->data, cd, a);
    }
    return launch_status(msg, len, c->op == XHAL_OP_ROPE_BACKWARD ? "rope_backward" : "rope");
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<RopeKernel>(host, XHAL_GPU_BACKEND ".rope", XHAL_OP_ROPE);
  register_float_kernels<RopeKernel>(host, XHAL_GPU_BACKEND ".rope_backward", XHAL_OP_ROPE_BACKWARD);
}

}  // namespace xhal::gpu

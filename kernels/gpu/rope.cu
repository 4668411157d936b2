// rope on the GPU, in place on q and k: blocks loop over tokens; the threads of a block cover every
// (head, pair) of q and then of k, so the token's cos/sin row is read from L1. With aligned rows
// each thread rotates 8 elements per 16-byte access (neox: 8 pairs across the two halves; gptj:
// 4 adjacent pairs), else one pair with scalar accesses. Positions outside
// the cache leave their token unrotated (checked without a host round trip; see docs/ops.md).
#include "launch.cuh"

namespace xhal::gpu {
namespace {

template <class E>
__device__ void rotate_heads(typename E::T* x, int64_t heads, int64_t head_stride, int64_t half,
                             bool neox, const float* cs) {
  for (int64_t w = threadIdx.x; w < heads * half; w += blockDim.x) {
    const int64_t h = w / half, i = w % half;
    typename E::T* p = x + h * head_stride;
    const int64_t ia = neox ? i : 2 * i, ib = neox ? i + half : 2 * i + 1;
    const float a = E::load(p[ia]), b = E::load(p[ib]);
    const float c = cs[i], s = cs[half + i];
    p[ia] = E::store(a * c - b * s);
    p[ib] = E::store(b * c + a * s);
  }
}

// Vector path: work item w is (head, 16-byte chunk) of the rotary part.
template <class E>
__device__ void rotate_heads_vec(typename E::T* x, int64_t heads, int64_t head_stride, int64_t half,
                                 bool neox, const float* cs) {
  const int64_t chunks = neox ? half / 8 : 2 * half / 8;
  for (int64_t w = threadIdx.x; w < heads * chunks; w += blockDim.x) {
    const int64_t h = w / chunks, ch = w % chunks;
    typename E::T* p = x + h * head_stride;
    if (neox) {
      auto a = Vec<E>::load_from(p + ch * 8), b = Vec<E>::load_from(p + half + ch * 8);
      Vec<E> ra, rb;
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        const float c = cs[ch * 8 + e], s = cs[half + ch * 8 + e];
        const float fa = E::load(a.v[e]), fb = E::load(b.v[e]);
        ra.v[e] = E::store(fa * c - fb * s);
        rb.v[e] = E::store(fb * c + fa * s);
      }
      ra.store_to(p + ch * 8);
      rb.store_to(p + half + ch * 8);
    } else {
      auto a = Vec<E>::load_from(p + ch * 8);
      Vec<E> r;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float c = cs[ch * 4 + e], s = cs[half + ch * 4 + e];
        const float fa = E::load(a.v[2 * e]), fb = E::load(a.v[2 * e + 1]);
        r.v[2 * e] = E::store(fa * c - fb * s);
        r.v[2 * e + 1] = E::store(fb * c + fa * s);
      }
      r.store_to(p + ch * 8);
    }
  }
}

struct RopeArgs {
  int64_t tokens, q_heads, k_heads;
  int64_t q_token_stride, q_head_stride, k_token_stride, k_head_stride;
  int64_t pos_stride, max_pos, cache_stride, half;
  bool neox, pos64;
};

template <class E, bool kVec>
__global__ void rope_kernel(typename E::T* q, typename E::T* k, const void* positions,
                            const float* cache, RopeArgs a) {
  for (int64_t t = blockIdx.x; t < a.tokens; t += gridDim.x) {
    const int64_t p = a.pos64 ? static_cast<const int64_t*>(positions)[t * a.pos_stride]
                              : static_cast<const int32_t*>(positions)[t * a.pos_stride];
    if (p < 0 || p >= a.max_pos) continue;
    const float* cs = cache + p * a.cache_stride;
    if constexpr (kVec) {
      rotate_heads_vec<E>(q + t * a.q_token_stride, a.q_heads, a.q_head_stride, a.half, a.neox, cs);
      rotate_heads_vec<E>(k + t * a.k_token_stride, a.k_heads, a.k_head_stride, a.half, a.neox, cs);
    } else {
      rotate_heads<E>(q + t * a.q_token_stride, a.q_heads, a.q_head_stride, a.half, a.neox, cs);
      rotate_heads<E>(k + t * a.k_token_stride, a.k_heads, a.k_head_stride, a.half, a.neox, cs);
    }
  }
}

template <class E>
struct RopeKernel {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    using T = typename E::T;
    const DLTensor* q = c->t[XHAL_SLOT_ROPE_Q];
    const DLTensor* k = c->t[XHAL_SLOT_ROPE_K];
    const DLTensor* pos = c->t[XHAL_SLOT_POSITIONS];
    const DLTensor* cache = c->t[XHAL_SLOT_COS_SIN];
    const RopeArgs a{q->shape[0],      q->shape[1],      k->shape[1],      q->strides[0],
                     q->strides[1],    k->strides[0],    k->strides[1],    pos->strides[0],
                     cache->shape[0],  cache->strides[0], cache->shape[1] / 2,
                     c->params.rope_neox != 0, pos->dtype.bits == 64};
    if (a.tokens == 0) return XHAL_OK;
    const int64_t pairs = (a.q_heads + a.k_heads) * a.half;
    const int threads = int(std::min<int64_t>(512, std::max<int64_t>(32, (pairs / 2 + 31) / 32 * 32)));
    // 16-byte accesses need 8-element chunks of the rotary half and aligned heads.
    bool vec = Vec<E>::kVec == 8 && a.half % 8 == 0;
    for (const DLTensor* t : {q, k}) {
      vec = vec && reinterpret_cast<uintptr_t>(t->data) % 16 == 0 && t->strides[0] % 8 == 0 &&
            t->strides[1] % 8 == 0;
    }
    auto go = [&](auto kernel) {
      kernel<<<grid_for(a.tokens, 1, int64_t(1) << 20), threads, 0,
               static_cast<gpuStream_t>(c->stream)>>>(static_cast<T*>(q->data), static_cast<T*>(k->data),
                                                      pos->data, static_cast<const float*>(cache->data), a);
    };
    if (vec) go(rope_kernel<E, true>);
    else go(rope_kernel<E, false>);
    return launch_status(msg, len, "rope");
  }
};

}  // namespace

void register_rope_kernels(const xhal_host_api* host) {
  register_float_kernels<RopeKernel>(host, XHAL_GPU_BACKEND ".rope", XHAL_OP_ROPE);
}

}  // namespace xhal::gpu

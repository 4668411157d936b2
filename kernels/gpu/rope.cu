// rope on the GPU, in place on q and k: blocks loop over tokens; the threads of a block cover every
// (head, pair) of q and then of k, so the token's cos/sin row is read from L1. Positions outside
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

struct RopeArgs {
  int64_t tokens, q_heads, k_heads;
  int64_t q_token_stride, q_head_stride, k_token_stride, k_head_stride;
  int64_t pos_stride, max_pos, cache_stride, half;
  bool neox, pos64;
};

template <class E>
__global__ void rope_kernel(typename E::T* q, typename E::T* k, const void* positions,
                            const float* cache, RopeArgs a) {
  for (int64_t t = blockIdx.x; t < a.tokens; t += gridDim.x) {
    const int64_t p = a.pos64 ? static_cast<const int64_t*>(positions)[t * a.pos_stride]
                              : static_cast<const int32_t*>(positions)[t * a.pos_stride];
    if (p < 0 || p >= a.max_pos) continue;
    const float* cs = cache + p * a.cache_stride;
    rotate_heads<E>(q + t * a.q_token_stride, a.q_heads, a.q_head_stride, a.half, a.neox, cs);
    rotate_heads<E>(k + t * a.k_token_stride, a.k_heads, a.k_head_stride, a.half, a.neox, cs);
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
    rope_kernel<E><<<grid_for(a.tokens, 1, int64_t(1) << 20), threads, 0,
                     static_cast<gpuStream_t>(c->stream)>>>(
        static_cast<T*>(q->data), static_cast<T*>(k->data), pos->data,
        static_cast<const float*>(cache->data), a);
    return launch_status(msg, len, "rope");
  }
};

}  // namespace

void register_rope_kernels(const xhal_host_api* host) {
  register_float_kernels<RopeKernel>(host, XHAL_GPU_BACKEND ".rope", XHAL_OP_ROPE);
}

}  // namespace xhal::gpu

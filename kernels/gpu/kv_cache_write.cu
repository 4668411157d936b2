// kv_cache_write on any GPU: one block per token copies its heads' key and value rows to its slot
// in 16-byte vectors (scalars when a row is not aligned). Slots are not checked against each other
// (that would take a sort or a synchronisation per call): a negative slot or one past the cache
// skips the token, and of tokens that share a slot one lands (docs/ops.md).
#include <algorithm>

#include "launch.cuh"

namespace xhal::gpu {
namespace {

// A [T, H, D] source or a [blocks, block_size, H, D] cache, by its strides.
template <class T>
struct Rows {
  T* data;
  int64_t outer, inner, head;  // token (or block), -, head strides; inner: the cache's row stride
};

template <class E, int VEC>
__global__ void kv_cache_write_kernel(Rows<const typename E::T> k, Rows<const typename E::T> v, const void* slots,
                                      int64_t slot_stride, bool wide_slots, Rows<typename E::T> k_cache,
                                      Rows<typename E::T> v_cache, int64_t capacity, int64_t block_size, int heads,
                                      int k_chunks, int v_chunks) {
  const int64_t t = blockIdx.x;
  // The token's rows and its slot are loaded together, the stores wait on all three: a chain of
  // slot, then key, then value left the copy at 0.70 of copy on an H200.
  const int64_t s = index_at(slots, slot_stride, wide_slots, t);
  const typename E::T *k_from = k.data + t * k.outer, *v_from = v.data + t * v.outer;
  const int per_head = max(k_chunks, v_chunks);
  for (int i = threadIdx.x; i < heads * per_head; i += blockDim.x) {
    const int h = i / per_head, c = i % per_head;
    const bool has_k = c < k_chunks, has_v = c < v_chunks;
    Chunk<E, VEC> x, y;
    if (has_k) x.load(k_from + h * k.head + c * VEC);
    if (has_v) y.load(v_from + h * v.head + c * VEC);
    if (s < 0 || s >= capacity) return;
    const int64_t block = s / block_size, row = s % block_size;
    if (has_k) x.store(k_cache.data + block * k_cache.outer + row * k_cache.inner + h * k_cache.head + c * VEC);
    if (has_v) y.store(v_cache.data + block * v_cache.outer + row * v_cache.inner + h * v_cache.head + c * VEC);
  }
}

template <class E>
struct KvCacheWrite {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    using T = typename E::T;
    const DLTensor *k = c->tensors[XHAL_KV_CACHE_WRITE_K], *v = c->tensors[XHAL_KV_CACHE_WRITE_V];
    const DLTensor *k_cache = c->tensors[XHAL_KV_CACHE_WRITE_K_CACHE],
                   *v_cache = c->tensors[XHAL_KV_CACHE_WRITE_V_CACHE];
    const DLTensor* slots = c->tensors[XHAL_KV_CACHE_WRITE_SLOT_MAPPING];
    const int64_t tokens = k->shape[0], heads = k->shape[1], D = k->shape[2], Dv = v->shape[2];
    if (tokens == 0 || heads == 0 || (D == 0 && Dv == 0)) return XHAL_OK;
    if (tokens > 0x7fffffff || heads * std::max(D, Dv) > 0x7fffffff) {
      return kernel_error(msg, len, XHAL_ERR_UNSUPPORTED, "kv_cache_write: more than 2^31 tokens or values a token");
    }
    int64_t capacity = 0;
    if (__builtin_mul_overflow(k_cache->shape[0], k_cache->shape[1], &capacity)) capacity = INT64_MAX;
    const bool vec = rows_vectorizable(k, D) && rows_vectorizable(k_cache, D) && rows_vectorizable(v, Dv) &&
                     rows_vectorizable(v_cache, Dv);
    const Rows<const T> k_rows{static_cast<const T*>(k->data), k->strides[0], 0, k->strides[1]};
    const Rows<const T> v_rows{static_cast<const T*>(v->data), v->strides[0], 0, v->strides[1]};
    const Rows<T> kc{static_cast<T*>(k_cache->data), k_cache->strides[0], k_cache->strides[1], k_cache->strides[2]};
    const Rows<T> vc{static_cast<T*>(v_cache->data), v_cache->strides[0], v_cache->strides[1], v_cache->strides[2]};
    auto launch = [&](auto kernel, int per_vector) {
      const int threads = block_threads(heads * std::max(D, Dv) / per_vector, 256);
      kernel<<<unsigned(tokens), threads, 0, static_cast<gpuStream_t>(c->stream)>>>(
          k_rows, v_rows, slots->data, slots->strides[0], slots->dtype.bits == 64, kc, vc, capacity, k_cache->shape[1],
          int(heads), int(D / per_vector), int(Dv / per_vector));
    };
    if (vec) {
      launch(kv_cache_write_kernel<E, Vec<E>::kVec>, Vec<E>::kVec);
    } else {
      launch(kv_cache_write_kernel<E, 1>, 1);
    }
    return launch_status(msg, len, "kv_cache_write");
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<KvCacheWrite>(host, XHAL_GPU_BACKEND ".kv_cache_write", XHAL_OP_KV_CACHE_WRITE);
}

}  // namespace xhal::gpu

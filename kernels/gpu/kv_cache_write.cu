// kv_cache_write on any GPU: one block per token copies its heads' key and value rows to its slot
// in 16-byte vectors (scalars when a row is not aligned). Slots are not checked against each other
// (that would take a sort or a synchronisation per call): a negative slot or one past the cache
// skips the token, and of tokens that share a slot one lands (docs/ops.md). An f8_e4m3 cache gets
// each value's code of x * (1 / scale of its kv head), as quantize writes it (the same bytes as
// the CPU's).
#include <algorithm>

#include "fp8_codes.cuh"
#include "kernels/fp8_cache_call.hpp"
#include "launch.cuh"

namespace xhal::gpu {
namespace {

// A [T, H, D] source or a [blocks, block_size, H, D] cache, by its strides.
template <class T>
struct Rows {
  T* data;
  int64_t outer, inner, head;  // token (or block), -, head strides; inner: the cache's row stride
};

// What a launch of either cache's kernel passes: the source rows, the slots, the cache's capacity
// and block size, and the chunks of VEC values a head of k and of v.
template <class T>
struct TokenRows {
  Rows<const T> k, v;
  const void* slots;
  int64_t slot_stride;
  bool wide_slots;
  int64_t capacity, block_size;
  int heads, k_chunks, v_chunks;
  __device__ int64_t slot(int64_t t) const { return index_at(slots, slot_stride, wide_slots, t); }
};

template <class E, int VEC>
__global__ void kv_cache_write_kernel(TokenRows<typename E::T> src, Rows<typename E::T> k_cache,
                                      Rows<typename E::T> v_cache) {
  const int64_t t = blockIdx.x;
  // The token's rows and its slot are loaded together, the stores wait on all three: a chain of
  // slot, then key, then value left the copy at 0.70 of copy on an H200.
  const int64_t s = src.slot(t);
  const typename E::T *k_from = src.k.data + t * src.k.outer, *v_from = src.v.data + t * src.v.outer;
  const int per_head = max(src.k_chunks, src.v_chunks);
  for (int i = threadIdx.x; i < src.heads * per_head; i += blockDim.x) {
    const int h = i / per_head, c = i % per_head;
    const bool has_k = c < src.k_chunks, has_v = c < src.v_chunks;
    Chunk<E, VEC> x, y;
    if (has_k) x.load(k_from + h * src.k.head + c * VEC);
    if (has_v) y.load(v_from + h * src.v.head + c * VEC);
    if (s < 0 || s >= src.capacity) return;
    const int64_t block = s / src.block_size, row = s % src.block_size;
    if (has_k) x.store(k_cache.data + block * k_cache.outer + row * k_cache.inner + h * k_cache.head + c * VEC);
    if (has_v) y.store(v_cache.data + block * v_cache.outer + row * v_cache.inner + h * v_cache.head + c * VEC);
  }
}

// An f8_e4m3 cache and its scales.
struct Fp8Rows {
  uint8_t* data;
  int64_t block, slot, head;
  const float* scale;
  bool per_head;
};

// A block per token, VEC values of a head a thread, their VEC codes stored as one word.
template <class E, int VEC>
__global__ void kv_cache_write_fp8_kernel(TokenRows<typename E::T> src, Fp8Rows k_cache, Fp8Rows v_cache) {
  const int64_t t = blockIdx.x;
  const int64_t s = src.slot(t);
  if (s < 0 || s >= src.capacity) return;
  const int64_t block = s / src.block_size, row = s % src.block_size;
  const int per_head = src.k_chunks + src.v_chunks;
  for (int i = threadIdx.x; i < src.heads * per_head; i += blockDim.x) {
    const int h = i / per_head, c = i % per_head;
    const bool is_k = c < src.k_chunks;
    const Rows<const typename E::T>& from = is_k ? src.k : src.v;
    const Fp8Rows& to = is_k ? k_cache : v_cache;
    const int chunk = is_k ? c : c - src.k_chunks;
    Chunk<E, VEC> x;
    x.load(from.data + t * from.outer + h * from.head + chunk * VEC);
    const float inverse = kernels::inverse_scale(to.scale[to.per_head ? h : 0]);
    *reinterpret_cast<Codes<VEC>*>(to.data + block * to.block + row * to.slot + h * to.head + chunk * VEC) =
        codes_of<VEC>(x, inverse, kernels::QuantFormat::e4m3);
  }
}

// Whether an fp8 cache's rows of `cols` codes take stores of `bytes`.
bool code_rows_aligned(const DLTensor* cache, int64_t cols, int bytes) {
  if (reinterpret_cast<uintptr_t>(cache->data) % bytes != 0 || cols % bytes != 0) return false;
  for (int d = 0; d < 3; ++d) {
    if (cache->strides[d] % bytes != 0) return false;
  }
  return true;
}

// Both caches' launch: the call's rows and slots, a block per token, `kernel` (the VEC = Vec<E>::kVec
// instantiation where `vec`, else VEC = 1) over `chunks a head` threads, which the caller's kernel
// defines from k's and v's chunks. Nothing to write, or a launch past 2^31, is handled here.
template <class E, class Kernel, class Cache, class ChunksAHead>
xhal_status write_tokens(const xhal_op_call* c, char* msg, size_t len, const char* what, bool vec, Kernel kernel,
                         ChunksAHead chunks_a_head, Cache k_cache, Cache v_cache) {
  using T = typename E::T;
  const DLTensor *k = c->tensors[XHAL_KV_CACHE_WRITE_K], *v = c->tensors[XHAL_KV_CACHE_WRITE_V];
  const DLTensor *kc = c->tensors[XHAL_KV_CACHE_WRITE_K_CACHE], *slots = c->tensors[XHAL_KV_CACHE_WRITE_SLOT_MAPPING];
  const int64_t tokens = k->shape[0], heads = k->shape[1], D = k->shape[2], Dv = v->shape[2];
  if (tokens == 0 || heads == 0 || (D == 0 && Dv == 0)) return XHAL_OK;
  if (tokens > 0x7fffffff || heads * (D + Dv) > 0x7fffffff) {
    return kernel_error(msg, len, XHAL_ERR_UNSUPPORTED, "kv_cache_write: more than 2^31 tokens or values a token");
  }
  int64_t capacity = 0;
  if (__builtin_mul_overflow(kc->shape[0], kc->shape[1], &capacity)) capacity = INT64_MAX;
  const int per_vector = vec ? Vec<E>::kVec : 1;
  const TokenRows<T> src{{static_cast<const T*>(k->data), k->strides[0], 0, k->strides[1]},
                         {static_cast<const T*>(v->data), v->strides[0], 0, v->strides[1]},
                         slots->data,
                         slots->strides[0],
                         slots->dtype.bits == 64,
                         capacity,
                         kc->shape[1],
                         int(heads),
                         int(D / per_vector),
                         int(Dv / per_vector)};
  const int threads = block_threads(heads * chunks_a_head(src.k_chunks, src.v_chunks), 256);
  kernel<<<unsigned(tokens), threads, 0, static_cast<gpuStream_t>(c->stream)>>>(src, k_cache, v_cache);
  return launch_status(msg, len, what);
}

template <class E>
struct KvCacheWrite {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    using T = typename E::T;
    const DLTensor *k = c->tensors[XHAL_KV_CACHE_WRITE_K], *v = c->tensors[XHAL_KV_CACHE_WRITE_V];
    const DLTensor *k_cache = c->tensors[XHAL_KV_CACHE_WRITE_K_CACHE],
                   *v_cache = c->tensors[XHAL_KV_CACHE_WRITE_V_CACHE];
    const int64_t D = k->shape[2], Dv = v->shape[2];
    const bool vec = rows_vectorizable(k, D) && rows_vectorizable(k_cache, D) && rows_vectorizable(v, Dv) &&
                     rows_vectorizable(v_cache, Dv);
    auto rows = [](const DLTensor* cache) {
      return Rows<T>{static_cast<T*>(cache->data), cache->strides[0], cache->strides[1], cache->strides[2]};
    };
    // A thread copies a chunk of k and of v: the threads cover the longer row.
    return write_tokens<E>(
        c, msg, len, "kv_cache_write", vec, vec ? kv_cache_write_kernel<E, Vec<E>::kVec> : kv_cache_write_kernel<E, 1>,
        [](int k_chunks, int v_chunks) { return std::max(k_chunks, v_chunks); }, rows(k_cache), rows(v_cache));
  }
};

// The fp8 cache's kernel, for the source's dtype.
xhal_status kv_cache_write_fp8(const xhal_op_call* c, char* msg, size_t len) {
  return kernels::with_float_element<F32, F16, BF16>(c->tensors[XHAL_KV_CACHE_WRITE_K], [&](auto e) {
    using E = decltype(e);
    const DLTensor *k = c->tensors[XHAL_KV_CACHE_WRITE_K], *v = c->tensors[XHAL_KV_CACHE_WRITE_V];
    const DLTensor *k_cache = c->tensors[XHAL_KV_CACHE_WRITE_K_CACHE],
                   *v_cache = c->tensors[XHAL_KV_CACHE_WRITE_V_CACHE];
    const int64_t D = k->shape[2], Dv = v->shape[2];
    const bool vec = rows_vectorizable(k, D) && rows_vectorizable(v, Dv) &&
                     code_rows_aligned(k_cache, D, Vec<E>::kVec) && code_rows_aligned(v_cache, Dv, Vec<E>::kVec);
    auto rows = [](const DLTensor* cache, const DLTensor* scale) {
      return Fp8Rows{static_cast<uint8_t*>(cache->data),     cache->strides[0],  cache->strides[1], cache->strides[2],
                     static_cast<const float*>(scale->data), scale->shape[0] > 1};
    };
    // A thread converts a chunk of k or of v: the threads cover both rows.
    return write_tokens<E>(
        c, msg, len, "kv_cache_write (fp8 cache)", vec,
        vec ? kv_cache_write_fp8_kernel<E, Vec<E>::kVec> : kv_cache_write_fp8_kernel<E, 1>,
        [](int k_chunks, int v_chunks) { return k_chunks + v_chunks; },
        rows(k_cache, c->tensors[XHAL_KV_CACHE_WRITE_K_SCALE]), rows(v_cache, c->tensors[XHAL_KV_CACHE_WRITE_V_SCALE]));
  });
}

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  kernels::register_kernel(host, XHAL_GPU_BACKEND ".kv_cache_write_fp8", XHAL_OP_KV_CACHE_WRITE, XHAL_DTYPE_F8_E4M3,
                           &on_call_device<&kv_cache_write_fp8>, accuracy_for(XHAL_DTYPE_BF16), {0, true, nullptr});
  register_float_kernels<KvCacheWrite>(host, XHAL_GPU_BACKEND ".kv_cache_write", XHAL_OP_KV_CACHE_WRITE);
}

}  // namespace xhal::gpu

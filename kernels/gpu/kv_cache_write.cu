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

// The fp8 cache: a block per token, VEC values of a head a thread, VEC codes stored as one word.
struct Fp8Rows {
  uint8_t* data;
  int64_t block, slot, head;
  const float* scale;
  bool per_head;
};

template <class E, int VEC>
__global__ void kv_cache_write_fp8_kernel(Rows<const typename E::T> k, Rows<const typename E::T> v, const void* slots,
                                          int64_t slot_stride, bool wide_slots, Fp8Rows k_cache, Fp8Rows v_cache,
                                          int64_t capacity, int64_t block_size, int heads, int k_chunks, int v_chunks) {
  const int64_t t = blockIdx.x;
  const int64_t s = index_at(slots, slot_stride, wide_slots, t);
  if (s < 0 || s >= capacity) return;
  const int64_t block = s / block_size, row = s % block_size;
  const int per_head = k_chunks + v_chunks;
  for (int i = threadIdx.x; i < heads * per_head; i += blockDim.x) {
    const int h = i / per_head, c = i % per_head;
    const bool is_k = c < k_chunks;
    const Rows<const typename E::T>& src = is_k ? k : v;
    const Fp8Rows& dst = is_k ? k_cache : v_cache;
    const int chunk = is_k ? c : c - k_chunks;
    Chunk<E, VEC> x;
    x.load(src.data + t * src.outer + h * src.head + chunk * VEC);
    const float inverse = kernels::inverse_scale(dst.scale[dst.per_head ? h : 0]);
    Codes<VEC> codes;
    if constexpr (VEC % 2 == 0) {
      for (int j = 0; j < VEC; j += 2) {
        const uint16_t pair = codes_of_pair(x.get(j) * inverse, x.get(j + 1) * inverse, kernels::QuantFormat::e4m3);
        codes.b[j] = uint8_t(pair), codes.b[j + 1] = uint8_t(pair >> 8);
      }
    } else {
      for (int j = 0; j < VEC; ++j) codes.b[j] = kernels::quantize_value(x.get(j), inverse, kernels::QuantFormat::e4m3);
    }
    *reinterpret_cast<Codes<VEC>*>(dst.data + block * dst.block + row * dst.slot + h * dst.head + chunk * VEC) = codes;
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

template <class E>
xhal_status write_fp8(const xhal_op_call* c, char* msg, size_t len) {
  using T = typename E::T;
  const DLTensor *k = c->tensors[XHAL_KV_CACHE_WRITE_K], *v = c->tensors[XHAL_KV_CACHE_WRITE_V];
  const DLTensor *k_cache = c->tensors[XHAL_KV_CACHE_WRITE_K_CACHE], *v_cache = c->tensors[XHAL_KV_CACHE_WRITE_V_CACHE];
  const DLTensor *k_scale = c->tensors[XHAL_KV_CACHE_WRITE_K_SCALE], *v_scale = c->tensors[XHAL_KV_CACHE_WRITE_V_SCALE];
  const DLTensor* slots = c->tensors[XHAL_KV_CACHE_WRITE_SLOT_MAPPING];
  const int64_t tokens = k->shape[0], heads = k->shape[1], D = k->shape[2], Dv = v->shape[2];
  if (tokens == 0 || heads == 0 || (D == 0 && Dv == 0)) return XHAL_OK;
  if (tokens > 0x7fffffff || heads * (D + Dv) > 0x7fffffff) {
    return kernel_error(msg, len, XHAL_ERR_UNSUPPORTED, "kv_cache_write: more than 2^31 tokens or values a token");
  }
  int64_t capacity = 0;
  if (__builtin_mul_overflow(k_cache->shape[0], k_cache->shape[1], &capacity)) capacity = INT64_MAX;
  constexpr int kVec = Vec<E>::kVec;
  const bool vec = rows_vectorizable(k, D) && rows_vectorizable(v, Dv) && code_rows_aligned(k_cache, D, kVec) &&
                   code_rows_aligned(v_cache, Dv, kVec);
  const Rows<const T> k_rows{static_cast<const T*>(k->data), k->strides[0], 0, k->strides[1]};
  const Rows<const T> v_rows{static_cast<const T*>(v->data), v->strides[0], 0, v->strides[1]};
  auto fp8_rows = [](const DLTensor* cache, const DLTensor* scale) {
    return Fp8Rows{static_cast<uint8_t*>(cache->data),     cache->strides[0],  cache->strides[1], cache->strides[2],
                   static_cast<const float*>(scale->data), scale->shape[0] > 1};
  };
  auto launch = [&](auto kernel, int per_vector) {
    const int threads = block_threads(heads * (D + Dv) / per_vector, 256);
    kernel<<<unsigned(tokens), threads, 0, static_cast<gpuStream_t>(c->stream)>>>(
        k_rows, v_rows, slots->data, slots->strides[0], slots->dtype.bits == 64, fp8_rows(k_cache, k_scale),
        fp8_rows(v_cache, v_scale), capacity, k_cache->shape[1], int(heads), int(D / per_vector), int(Dv / per_vector));
  };
  if (vec) {
    launch(kv_cache_write_fp8_kernel<E, kVec>, kVec);
  } else {
    launch(kv_cache_write_fp8_kernel<E, 1>, 1);
  }
  return launch_status(msg, len, "kv_cache_write (fp8 cache)");
}

// The fp8 cache's kernel, for the source's dtype.
xhal_status kv_cache_write_fp8(const xhal_op_call* c, char* msg, size_t len) {
  return kernels::with_float_element<F32, F16, BF16>(c->tensors[XHAL_KV_CACHE_WRITE_K],
                                                     [&](auto e) { return write_fp8<decltype(e)>(c, msg, len); });
}

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  kernels::register_kernel(host, XHAL_GPU_BACKEND ".kv_cache_write_fp8", XHAL_OP_KV_CACHE_WRITE, XHAL_DTYPE_F8_E4M3,
                           &on_call_device<&kv_cache_write_fp8>, accuracy_for(XHAL_DTYPE_BF16), {0, true, nullptr});
  register_float_kernels<KvCacheWrite>(host, XHAL_GPU_BACKEND ".kv_cache_write", XHAL_OP_KV_CACHE_WRITE);
}

}  // namespace xhal::gpu

// kv_cache_write on the CPU: every slot checked (inside the cache, none used twice) before anything
// is written, then each token's rows copied: all its heads at once where they are contiguous in
// both k (v) and the cache, with streaming stores into a cache larger than kStreamBytes (its lines
// are not read before they are written). An f8_e4m3 cache stores each value's code of x * (1 /
// scale of its kv head), as quantize writes it.
#include <algorithm>
#include <cstring>
#include <vector>

#include "element.hpp"
#include "kernels/fp8_cache_call.hpp"
#include "kernels/quantize.hpp"
#include "kernel_registration.hpp"
#include "stream_threshold.hpp"
#include "streaming_rows.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {
namespace {

// The cache's slot count, num_blocks * block_size (saturated: a cache of zero-sized rows may have
// more slots than int64 holds).
int64_t cache_slots(const DLTensor* cache) {
  int64_t slots = 0;
  return __builtin_mul_overflow(cache->shape[0], cache->shape[1], &slots) ? INT64_MAX : slots;
}

// XHAL_OK when every non-negative slot is below `slots` and none repeats.
xhal_status check_slots(const DLTensor* slot_mapping, int64_t slots, char* msg, size_t len) {
  const int64_t T = slot_mapping->shape[0];
  std::vector<int64_t> used;
  used.reserve(size_t(T));
  for (int64_t t = 0; t < T; ++t) {
    const int64_t s = index_at(slot_mapping, t);
    if (s < 0) continue;
    if (s >= slots) {
      return kernels::kernel_error(msg, len, XHAL_ERR_INVALID_ARGUMENT,
                                   "argument 'slot_mapping': expected slots in 0..%lld or negative (skipped), got "
                                   "slot_mapping[%lld] = %lld",
                                   (long long)(slots - 1), (long long)t, (long long)s);
    }
    used.push_back(s);
  }
  std::sort(used.begin(), used.end());
  const auto twice = std::adjacent_find(used.begin(), used.end());
  if (twice != used.end()) {
    return kernels::kernel_error(msg, len, XHAL_ERR_INVALID_ARGUMENT,
                                 "argument 'slot_mapping': expected each slot at most once, got slot %lld twice",
                                 (long long)*twice);
  }
  return XHAL_OK;
}

// How a token's rows of k (or v) are copied: heads_at_once heads of `bytes` per copy (all of them
// where source and cache hold the heads back to back).
struct Rows {
  int64_t heads_at_once;
  size_t bytes;
};
template <class S>
Rows rows_of(const TensorRef<const S>& src, const TensorRef<S>& cache) {
  const int64_t H = src.size(1), D = src.size(2);
  const bool contiguous = H <= 1 || (src.stride(1) == D && cache.stride(2) == D);
  return contiguous ? Rows{std::max<int64_t>(H, 1), size_t(H * D) * sizeof(S)} : Rows{1, size_t(D) * sizeof(S)};
}

size_t cache_bytes(const DLTensor* cache) {
  size_t bytes = cache->dtype.bits / 8;
  for (int d = 0; d < cache->ndim; ++d) bytes *= size_t(cache->shape[d]);  // fits: checked by the front end
  return bytes;
}

// A row of zero bytes may be an empty tensor's null data: memcpy must not see it.
void copy_row(void* dst, const void* src, size_t bytes) {
  if (bytes != 0) std::memcpy(dst, src, bytes);
}

template <class E>
struct KvCacheWriteKernel {
  using S = typename E::Storage;
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    const DLTensor* slot_mapping = c->tensors[XHAL_KV_CACHE_WRITE_SLOT_MAPPING];
    const TensorRef<const S> k(c->tensors[XHAL_KV_CACHE_WRITE_K]), v(c->tensors[XHAL_KV_CACHE_WRITE_V]);
    const TensorRef<S> k_cache(c->tensors[XHAL_KV_CACHE_WRITE_K_CACHE]);
    const TensorRef<S> v_cache(c->tensors[XHAL_KV_CACHE_WRITE_V_CACHE]);
    if (const xhal_status s = check_slots(slot_mapping, cache_slots(c->tensors[XHAL_KV_CACHE_WRITE_K_CACHE]), msg, len);
        s != XHAL_OK) {
      return s;
    }
    const int64_t T = k.size(0), H = k.size(1), block_size = k_cache.size(1);
    const Rows keys = rows_of(k, k_cache), values = rows_of(v, v_cache);
    const bool stream = cache_bytes(c->tensors[XHAL_KV_CACHE_WRITE_K_CACHE]) >= kStreamBytes;
    const auto copy = stream ? stream_copy_row : copy_row;
#pragma omp parallel
    {
#pragma omp for schedule(static)
      for (int64_t t = 0; t < T; ++t) {
        const int64_t s = index_at(slot_mapping, t);
        if (s < 0) continue;
        const int64_t block = s / block_size, row = s % block_size;
        for (int64_t h = 0; h < H; h += keys.heads_at_once) {
          copy(k_cache.at(block, row, h), k.at(t, h), keys.bytes);
        }
        for (int64_t h = 0; h < H; h += values.heads_at_once) {
          copy(v_cache.at(block, row, h), v.at(t, h), values.bytes);
        }
      }
      streaming_fence();
    }
    return XHAL_OK;
  }
};

// Token t's rows of src ([T, H, D], E) as e4m3 codes into its slot of `cache`.
template <class E>
void quantize_rows(const DLTensor* src, const DLTensor* cache, const DLTensor* scale, const DLTensor* slot_mapping) {
  const TensorRef<const typename E::Storage> x(src);
  const TensorRef<uint8_t> codes(cache);
  const int64_t T = x.size(0), H = x.size(1), D = x.size(2), block_size = codes.size(1);
  const float* scales = static_cast<const float*>(scale->data);
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < T; ++t) {
    const int64_t s = index_at(slot_mapping, t);
    if (s < 0) continue;
    for (int64_t h = 0; h < H; ++h) {
      const float inverse = kernels::inverse_scale(scales[kernels::scale_index(scale, h)]);
      const typename E::Storage* from = x.at(t, h);
      uint8_t* to = codes.at(s / block_size, s % block_size, h);
      for (int64_t d = 0; d < D; ++d)
        to[d] = kernels::quantize_value(E::load(from[d]), inverse, kernels::QuantFormat::e4m3);
    }
  }
}

template <class E>
xhal_status write_fp8(const xhal_op_call* c) {
  const DLTensor* slots = c->tensors[XHAL_KV_CACHE_WRITE_SLOT_MAPPING];
  quantize_rows<E>(c->tensors[XHAL_KV_CACHE_WRITE_K], c->tensors[XHAL_KV_CACHE_WRITE_K_CACHE],
                   c->tensors[XHAL_KV_CACHE_WRITE_K_SCALE], slots);
  quantize_rows<E>(c->tensors[XHAL_KV_CACHE_WRITE_V], c->tensors[XHAL_KV_CACHE_WRITE_V_CACHE],
                   c->tensors[XHAL_KV_CACHE_WRITE_V_SCALE], slots);
  return XHAL_OK;
}

xhal_status kv_cache_write_fp8(const xhal_op_call* c, char* msg, size_t len) {
  if (const xhal_status s = check_slots(c->tensors[XHAL_KV_CACHE_WRITE_SLOT_MAPPING],
                                        cache_slots(c->tensors[XHAL_KV_CACHE_WRITE_K_CACHE]), msg, len);
      s != XHAL_OK) {
    return s;
  }
  return kernels::with_float_element<F32, F16, BF16>(c->tensors[XHAL_KV_CACHE_WRITE_K],
                                                     [&](auto e) { return write_fp8<decltype(e)>(c); });
}

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<KvCacheWriteKernel>(host, "cpu.kv_cache_write", XHAL_OP_KV_CACHE_WRITE);
  kernels::register_kernel(host, "cpu.kv_cache_write_fp8", XHAL_OP_KV_CACHE_WRITE, XHAL_DTYPE_F8_E4M3,
                           &kernels::guarded<&kv_cache_write_fp8>, accuracy_for(XHAL_DTYPE_BF16), {0, true, nullptr});
}

}  // namespace xhal::cpu

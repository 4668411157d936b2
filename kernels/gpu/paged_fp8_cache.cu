// paged_attention and paged_prefill over an f8_e4m3 KV cache on any GPU, for every shape: one
// kernel dequantizes the blocks the sequences read (code value times its kv head's scale, rounded
// once to q's dtype) into a compact cache with a table of its own, block i of sequence b at
// b * max_blocks + i, and the call runs on it through the core's choice of kernel for q's dtype
// (fp8_cache_call.hpp). The scratch holds what the table can address, B * max_blocks blocks. The
// fused decode kernel (paged_attention.cu) takes the shapes it supports first.
#include <algorithm>

#include "kernels/fp8_cache_call.hpp"
#include "kernels/quantize.hpp"
#include "launch.cuh"

namespace xhal::gpu {
namespace {

struct PageSource {
  const uint8_t* codes;
  int64_t block, slot, head;  // strides of the fp8 cache
  const float* scale;
  bool per_head;
  int64_t cols;  // D or Dv
  bool vec8;  // rows_of_eight
};

// Block (i, b): block i of sequence b, when the sequence reaches it and the table names a block of
// the cache; else its compact table entry is -1 (unreadable, as a bad index is for the paged
// kernels, and never read past the sequence's length).
template <class E>
__global__ void dequantize_pages_kernel(PageSource k, PageSource v, const int32_t* table, int64_t table_row,
                                        int64_t table_col, const int32_t* lens, int64_t lens_stride, int64_t num_blocks,
                                        int64_t block_size, int64_t heads, int64_t max_blocks, typename E::T* k_out,
                                        typename E::T* v_out, int32_t* table_out) {
  const int64_t i = blockIdx.x, b = blockIdx.y;
  const int64_t L = lens[b * lens_stride];
  const int64_t source = table[b * table_row + i * table_col];
  const bool used = i * block_size < L && source >= 0 && source < num_blocks;
  const int64_t compact = b * max_blocks + i;
  if (threadIdx.x == 0) table_out[compact] = used ? int32_t(compact) : -1;
  if (!used) return;
  for (int side = 0; side < 2; ++side) {
    const PageSource& src = side == 0 ? k : v;
    typename E::T* out = (side == 0 ? k_out : v_out) + compact * block_size * heads * src.cols;
    // Eight codes a thread (one 8-byte load, three divisions) where the rows allow it, else one.
    const int per = src.vec8 ? 8 : 1;
    const int64_t chunks = src.cols / per, rows = block_size * heads;
    for (int64_t e = threadIdx.x; e < rows * chunks; e += blockDim.x) {
      const int64_t row = e / chunks, c = e % chunks, h = row % heads, r = row / heads;
      const uint8_t* from = src.codes + source * src.block + r * src.slot + h * src.head + c * per;
      const float scale = src.scale[src.per_head ? h : 0];
      typename E::T* to = out + row * src.cols + c * per;
      if (per == 8) {
        const uint2 codes = *reinterpret_cast<const uint2*>(from);
        for (int j = 0; j < 8; ++j) {
          const uint8_t code = uint8_t((j < 4 ? codes.x : codes.y) >> (8 * (j % 4)));
          to[j] = E::store(kernels::dequantize_value(code, scale, kernels::QuantFormat::e4m3));
        }
      } else {
        to[0] = E::store(kernels::dequantize_value(*from, scale, kernels::QuantFormat::e4m3));
      }
    }
  }
}

// Whether a cache's rows of `cols` codes take 8-byte loads.
bool rows_of_eight(const DLTensor* cache, int64_t cols) {
  if (reinterpret_cast<uintptr_t>(cache->data) % 8 != 0 || cols % 8 != 0) return false;
  for (int d = 0; d < 3; ++d) {
    if (cache->strides[d] % 8 != 0) return false;
  }
  return true;
}

template <class E>
xhal_status run_typed(const xhal_op_call* c, char* msg, size_t len) {
  using T = typename E::T;
  const DLTensor *kc = c->tensors[XHAL_PAGED_ATTENTION_K_CACHE], *vc = c->tensors[XHAL_PAGED_ATTENTION_V_CACHE];
  const DLTensor *table = c->tensors[kernels::block_table_slot(c)], *lens = c->tensors[kernels::seq_lens_slot(c)];
  const DLTensor *ks = c->tensors[XHAL_PAGED_ATTENTION_K_SCALE], *vs = c->tensors[XHAL_PAGED_ATTENTION_V_SCALE];
  const int64_t B = table->shape[0], max_blocks = table->shape[1], block_size = kc->shape[1], heads = kc->shape[2];
  const int64_t D = kc->shape[3], Dv = vc->shape[3];
  // Bytes: the two compact caches and the table, each 256-byte aligned; -1 when they overflow.
  int64_t blocks = 0, k_elems = 0, v_elems = 0;
  const bool overflow = __builtin_mul_overflow(B, max_blocks, &blocks) ||
                        __builtin_mul_overflow(blocks, block_size * heads * D, &k_elems) ||
                        __builtin_mul_overflow(blocks, block_size * heads * Dv, &v_elems) ||
                        k_elems > (INT64_MAX / 4) / int64_t(sizeof(T)) ||
                        v_elems > (INT64_MAX / 4) / int64_t(sizeof(T));
  if (overflow) {
    return kernel_error(msg, len, XHAL_ERR_OUT_OF_MEMORY, "paged attention over an fp8 cache: scratch size overflows");
  }
  const auto aligned = [](int64_t bytes) { return (bytes + 255) / 256 * 256; };
  const int64_t k_bytes = aligned(k_elems * int64_t(sizeof(T))), v_bytes = aligned(v_elems * int64_t(sizeof(T)));
  const int64_t total = k_bytes + v_bytes + aligned(std::max<int64_t>(blocks, 1) * 4);
  void* scratch = nullptr;
  if (const xhal_status s =
          c->host->scratch_alloc(c->host->ctx, c->device, size_t(total), c->stream, &scratch, msg, len);
      s != XHAL_OK) {
    return s;
  }
  char* base = static_cast<char*>(scratch);
  T* k_out = reinterpret_cast<T*>(base);
  T* v_out = reinterpret_cast<T*>(base + k_bytes);
  int32_t* table_out = reinterpret_cast<int32_t*>(base + k_bytes + v_bytes);
  if (blocks > 0) {
    // The fp8 cache of one side (keys or values) as the kernel reads it.
    auto source = [](const DLTensor* cache, const DLTensor* scale) {
      const int64_t cols = cache->shape[3];
      return PageSource{static_cast<const uint8_t*>(cache->data),
                        cache->strides[0],
                        cache->strides[1],
                        cache->strides[2],
                        static_cast<const float*>(scale->data),
                        scale->shape[0] > 1,
                        cols,
                        rows_of_eight(cache, cols)};
    };
    const PageSource k = source(kc, ks), v = source(vc, vs);
    const dim3 grid(static_cast<unsigned>(max_blocks), static_cast<unsigned>(B));
    dequantize_pages_kernel<E><<<grid, 256, 0, static_cast<gpuStream_t>(c->stream)>>>(
        k, v, static_cast<const int32_t*>(table->data), table->strides[0], table->strides[1],
        static_cast<const int32_t*>(lens->data), lens->strides[0], kc->shape[0], block_size, heads, max_blocks, k_out,
        v_out, table_out);
  }
  xhal_status status = launch_status(msg, len, "dequantizing an fp8 cache's blocks");
  if (status == XHAL_OK) {
    const kernels::DequantizedCacheCall inner(c, blocks, k_out, v_out, table_out);
    status = inner.dispatch(msg, len);
  }
  c->host->scratch_free(c->host->ctx, c->device, scratch);  // ordered on the stream after the work
  return status;
}

xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
  const DLTensor* table = c->tensors[kernels::block_table_slot(c)];
  if (table->shape[0] > 65535 || table->shape[1] > 0x7fffffff) {
    return kernel_error(msg, len, XHAL_ERR_UNSUPPORTED,
                        "paged attention over an fp8 cache: more than 65535 sequences or 2^31 blocks a sequence");
  }
  return kernels::with_float_element<F32, F16, BF16>(c->tensors[XHAL_PAGED_ATTENTION_Q],
                                                     [&](auto e) { return run_typed<decltype(e)>(c, msg, len); });
}

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  kernels::register_kernel(host, XHAL_GPU_BACKEND ".paged_attention_fp8_dequantized", XHAL_OP_PAGED_ATTENTION,
                           XHAL_DTYPE_F8_E4M3, &on_call_device<&run>, accuracy_for(XHAL_DTYPE_BF16),
                           {0, true, nullptr});
  kernels::register_kernel(host, XHAL_GPU_BACKEND ".paged_prefill_fp8_dequantized", XHAL_OP_PAGED_PREFILL,
                           XHAL_DTYPE_F8_E4M3, &on_call_device<&run>, accuracy_for(XHAL_DTYPE_BF16),
                           {0, true, nullptr});
}

}  // namespace xhal::gpu

// paged_attention on the GPU: the split-KV decode kernels for f16/bf16 with aligned caches (on
// tensor cores when a kv head serves at most 16 query heads and D == Dv is one of the flash head
// dims, paged_decode_mma.cuh; else paged_decode.cuh) and for an f8_e4m3 cache
// (paged_decode_fp8.cuh), the generic kernel (one warp per (sequence, query head), keys gathered
// through the block table) for everything else. A block index outside the cache makes its keys
// unreadable (skipped) rather than read out of bounds; seq_lens are clamped to the table
// (docs/ops.md).
#include "attention_generic.cuh"
#include "kernels/fp8_cache_call.hpp"
#include "kernels/split_kv_plan.hpp"
#include "paged_decode.cuh"
#include "paged_decode_fp8.cuh"
#include "paged_decode_mma.cuh"

namespace xhal::gpu {
namespace {

struct PagedLayout {
  int64_t q_batch, q_head, o_batch, o_head, k_head, v_head, table_row, table_col, lens_stride;
  int64_t batch, Hq, group, D, Dv, max_blocks;
};

template <class E>
__global__ void __launch_bounds__(kGenericWarps* kWarpSize)
    generic_paged_kernel(const typename E::T* q, const typename E::T* k, const typename E::T* v, const int32_t* table,
                         const int32_t* lens, typename E::T* out, PagedKeys<typename E::T> keys, PagedLayout a,
                         Mask mask) {
  extern __shared__ float q_shared[];
  const int warp = threadIdx.x / kWarpSize;
  for (int64_t task = int64_t(blockIdx.x) * kGenericWarps + warp; task < a.batch * a.Hq;
       task += int64_t(gridDim.x) * kGenericWarps) {
    const int64_t b = task / a.Hq, h = task % a.Hq, hk = h / a.group;
    int64_t L = lens[b * a.lens_stride];
    L = L < 0 ? 0 : (L > a.max_blocks * keys.block_size ? a.max_blocks * keys.block_size : L);
    int64_t lo, hi;
    mask.visible(0, 1, L, &lo, &hi);
    PagedKeys<typename E::T> src = keys;
    src.k = k + hk * a.k_head;
    src.v = v + hk * a.v_head;
    src.table = table + b * a.table_row;
    attend_row<E>(q + b * a.q_batch + h * a.q_head, a.D, a.Dv, lo, hi, mask, src, out + b * a.o_batch + h * a.o_head,
                  nullptr, q_shared + warp * a.D);
  }
}

template <class E>
struct GenericPagedAttention {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    using T = typename E::T;
    const DLTensor *q = c->tensors[XHAL_PAGED_ATTENTION_Q], *kc = c->tensors[XHAL_PAGED_ATTENTION_K_CACHE],
                   *vc = c->tensors[XHAL_PAGED_ATTENTION_V_CACHE];
    const DLTensor *out = c->tensors[XHAL_PAGED_ATTENTION_OUT], *table = c->tensors[XHAL_PAGED_ATTENTION_BLOCK_TABLE];
    const DLTensor* lens = c->tensors[XHAL_PAGED_ATTENTION_SEQ_LENS];
    if (table->strides[1] != 1 && table->shape[1] > 1) {
      return kernels::kernel_error(msg, len, XHAL_ERR_UNSUPPORTED, "block_table rows must be contiguous on the GPU");
    }
    const PagedLayout a{q->strides[0],    q->strides[1],  out->strides[0],   out->strides[1],
                        kc->strides[2],   vc->strides[2], table->strides[0], table->strides[1],
                        lens->strides[0], q->shape[0],    q->shape[1],       q->shape[1] / kc->shape[2],
                        q->shape[2],      vc->shape[3],   table->shape[1]};
    if (a.batch * a.Hq == 0) return XHAL_OK;
    const PagedKeys<T> keys{nullptr,        nullptr,        nullptr,        kc->shape[1],  kc->shape[0],
                            kc->strides[0], kc->strides[1], vc->strides[0], vc->strides[1]};
    const size_t shared = size_t(kGenericWarps) * a.D * sizeof(float);
    if (shared > 48 * 1024) allow_shared_bytes(generic_paged_kernel<E>, shared);
    generic_paged_kernel<E><<<grid_for(a.batch * a.Hq, kGenericWarps, int64_t(1) << 20), kGenericWarps * kWarpSize,
                              shared, static_cast<gpuStream_t>(c->stream)>>>(
        static_cast<const T*>(q->data), static_cast<const T*>(kc->data), static_cast<const T*>(vc->data),
        static_cast<const int32_t*>(table->data), static_cast<const int32_t*>(lens->data), static_cast<T*>(out->data),
        keys, a, Mask::from(c->params));
    return launch_status(msg, len, "generic paged attention");
  }
};

const char* decode_supports(void*, const xhal_op_call* c) {
  const DLTensor *q = c->tensors[XHAL_PAGED_ATTENTION_Q], *kc = c->tensors[XHAL_PAGED_ATTENTION_K_CACHE],
                 *vc = c->tensors[XHAL_PAGED_ATTENTION_V_CACHE];
  const DLTensor* table = c->tensors[XHAL_PAGED_ATTENTION_BLOCK_TABLE];
  const int64_t D = q->shape[2], Dv = vc->shape[3], group = q->shape[1] / kc->shape[2];
  if (D % 8 != 0 || Dv % 8 != 0 || D > 256 || Dv > 256) return "head dims not multiples of 8 up to 256";
  if (group * Dv > kMaxGroupTimesDv) return "query heads per kv head x value dim above 8192";
  if (paged_decode_shared_bytes(group, D, Dv, 2) > size_t(kMaxDynamicSharedBytes)) {
    return "K/V tiles larger than a block's shared memory";
  }
  for (const DLTensor* t : {kc, vc}) {
    if (reinterpret_cast<uintptr_t>(t->data) % 16 != 0) return "caches not 16-byte aligned";
    for (int d = 0; d < 3; ++d) {
      if ((t->strides[d] * 2) % 16 != 0) return "cache strides not multiples of 8 elements";
    }
  }
  if (table->shape[1] > 1 && table->strides[1] != 1) return "block_table rows not contiguous";
  return nullptr;
}

// kFp8: the f8_e4m3 cache's kernel (paged_decode_fp8.cuh), which only the tensor-core path has
// (fp8_decode_supports).
template <class E, bool kFp8 = false>
struct PagedDecode {
  // A decode kernel and its dynamic shared bytes; kernel == nullptr when none takes the call.
  struct Launch {
    void (*kernel)(PagedDecodeArgs) = nullptr;
    size_t shared = 0;
  };
  // Decode kernels need more than the default 48 KiB of shared memory: allow what a block may have
  // (once for each kernel).
  template <void (*Kernel)(PagedDecodeArgs)>
  static Launch with(size_t shared) {
    static const bool raised = (allow_shared_bytes(Kernel, kMaxDynamicSharedBytes), true);
    (void)raised;
    return {Kernel, shared};
  }
#if !defined(__HIPCC__)
  template <int D>
  static Launch mma_dim() {
    return with<paged_decode_mma_kernel<E, D, D>>(paged_decode_mma_shared_bytes(D, D));
  }
  template <int NT>
  static Launch fp8(const PagedDecodeArgs& a) {
    switch (a.D) {
      case 64: return with<paged_decode_fp8_kernel<E, 64, NT>>(paged_decode_fp8_shared_bytes(64, a.group));
      case 128: return with<paged_decode_fp8_kernel<E, 128, NT>>(paged_decode_fp8_shared_bytes(128, a.group));
      case 256: return with<paged_decode_fp8_kernel<E, 256, NT>>(paged_decode_fp8_shared_bytes(256, a.group));
      default: return {};
    }
  }
#endif
  // The tensor-core kernel when it applies, else the SIMT one (16-bit caches) or none (fp8).
  static Launch pick(const PagedDecodeArgs& a) {
#if !defined(__HIPCC__)
    if constexpr (kFp8) {
      if (a.group > kFp8DecodeMaxGroup || a.D != a.Dv || a.block_shift < 0) return {};
      return a.group > 8 ? fp8<2>(a) : fp8<1>(a);
    } else if (a.group <= kMmaDecodeMaxGroup && a.D == a.Dv && a.block_shift >= 0) {
      switch (a.D) {
        case 64: return mma_dim<64>();
        case 80: return mma_dim<80>();
        case 96: return mma_dim<96>();
        case 128: return mma_dim<128>();
        case 256: return mma_dim<256>();
        default: break;
      }
    }
#endif
    if constexpr (kFp8) {
      return {};
    } else {
      return with<paged_decode_kernel<E>>(paged_decode_shared_bytes(a.group, a.D, a.Dv, sizeof(typename E::T)));
    }
  }

  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    const DLTensor *q = c->tensors[XHAL_PAGED_ATTENTION_Q], *kc = c->tensors[XHAL_PAGED_ATTENTION_K_CACHE],
                   *vc = c->tensors[XHAL_PAGED_ATTENTION_V_CACHE];
    const DLTensor *out = c->tensors[XHAL_PAGED_ATTENTION_OUT], *table = c->tensors[XHAL_PAGED_ATTENTION_BLOCK_TABLE];
    const DLTensor* lens = c->tensors[XHAL_PAGED_ATTENTION_SEQ_LENS];
    const int64_t B = q->shape[0], Hq = q->shape[1], Hkv = kc->shape[2];
    if (B * Hq == 0) return XHAL_OK;
    PagedDecodeArgs a{};
    a.q = q->data, a.k = kc->data, a.v = vc->data, a.out = out->data;
    a.table = static_cast<const int32_t*>(table->data);
    a.lens = static_cast<const int32_t*>(lens->data);
    a.q_batch = q->strides[0], a.q_head = q->strides[1];
    a.o_batch = out->strides[0], a.o_head = out->strides[1];
    a.k_block = kc->strides[0], a.k_slot = kc->strides[1], a.k_head = kc->strides[2];
    a.v_block = vc->strides[0], a.v_slot = vc->strides[1], a.v_head = vc->strides[2];
    a.table_row = table->strides[0], a.lens_stride = lens->strides[0];
    a.Hq = Hq, a.group = Hq / Hkv, a.D = q->shape[2], a.Dv = vc->shape[3];
    a.block_size = kc->shape[1], a.num_blocks = kc->shape[0], a.max_blocks = table->shape[1];
    a.block_shift = -1;
    for (int shift = 0; shift < 31; ++shift) {
      if ((int64_t(1) << shift) == a.block_size) a.block_shift = shift;
    }
    a.mask = Mask::from(c->params);
    if constexpr (kFp8) {
      const DLTensor *ks = c->tensors[XHAL_PAGED_ATTENTION_K_SCALE], *vs = c->tensors[XHAL_PAGED_ATTENTION_V_SCALE];
      a.k_scale = static_cast<const float*>(ks->data), a.k_scale_per_head = ks->shape[0] > 1;
      a.v_scale = static_cast<const float*>(vs->data), a.v_scale_per_head = vs->shape[0] > 1;
    }
    const Launch launch = pick(a);
    if (launch.kernel == nullptr) {  // fp8_decode_supports admits only the tensor-core shapes
      return kernels::kernel_error(msg, len, XHAL_ERR_INTERNAL,
                                   "paged decode over an fp8 cache: no kernel for head dim %lld", (long long)a.D);
    }
    // Cut the longest possible context into pieces of at least 256 keys so that the grid fills
    // its waves (kernels/split_kv_plan.hpp).
    const kernels::SplitKvPlan plan =
        kernels::plan_split_kv(B * Hkv, a.max_blocks * a.block_size, kTileKeys, 256,
                               resident_blocks(launch.kernel, kDecodeThreads, launch.shared, c->device));
    a.splits = plan.splits, a.keys_per_split = plan.keys_per_split;
    if (a.splits > kernels::kMaxSplitKvPieces) {  // the merge keeps a weight a piece in shared memory
      return kernels::kernel_error(msg, len, XHAL_ERR_INTERNAL, "paged decode: %lld pieces, above %lld",
                                   (long long)a.splits, (long long)kernels::kMaxSplitKvPieces);
    }

    void* scratch = nullptr;
    const size_t part_bytes = size_t(B * Hq * a.splits) * (size_t(a.Dv) + 1) * sizeof(float);
    if (a.splits > 1) {
      if (const xhal_status s =
              c->host->scratch_alloc(c->host->ctx, c->device, part_bytes, c->stream, &scratch, msg, len);
          s != XHAL_OK) {
        return s;  // the allocator's message names the request
      }
      a.part_out = static_cast<float*>(scratch);
      a.part_lse = a.part_out + B * Hq * a.splits * a.Dv;
    }
    auto stream = static_cast<gpuStream_t>(c->stream);
    const dim3 grid(unsigned(a.splits), unsigned(Hkv), unsigned(B));
    launch.kernel<<<grid, kDecodeThreads, launch.shared, stream>>>(a);
    if (a.splits > 1) {
      paged_decode_merge_kernel<E><<<unsigned(B * Hq), paged_decode_merge_threads(a.splits, a.Dv), 0, stream>>>(a);
    }
    const xhal_status status = launch_status(msg, len, "paged decode");
    if (scratch != nullptr) c->host->scratch_free(c->host->ctx, c->device, scratch);
    return status;
  }
};

#if !defined(__HIPCC__)
// The fp8 cache's decode kernel (paged_decode_fp8.cuh): D == Dv in {64, 128, 256}, a power-of-two
// block size, at most 16 query heads a kv head, 16-bit queries; the rest goes to the dequantizing
// kernel (paged_fp8_cache.cu).
const char* fp8_decode_supports(void*, const xhal_op_call* c) {
  const DLTensor *q = c->tensors[XHAL_PAGED_ATTENTION_Q], *kc = c->tensors[XHAL_PAGED_ATTENTION_K_CACHE],
                 *vc = c->tensors[XHAL_PAGED_ATTENTION_V_CACHE];
  const DLTensor* table = c->tensors[XHAL_PAGED_ATTENTION_BLOCK_TABLE];
  const int64_t D = q->shape[2], group = q->shape[1] / kc->shape[2], block_size = kc->shape[1];
  if (kernels::float_dtype_of(q) == XHAL_DTYPE_F32) return "f32 queries (the tensor cores take 16-bit ones)";
  if (vc->shape[3] != D || (D != 64 && D != 128 && D != 256)) return "head dims not equal and in {64, 128, 256}";
  if (group > kFp8DecodeMaxGroup) return "more than 16 query heads a kv head";
  if (block_size <= 0 || (block_size & (block_size - 1)) != 0) return "block size not a power of two";
  for (const DLTensor* t : {kc, vc}) {
    if (reinterpret_cast<uintptr_t>(t->data) % 16 != 0) return "caches not 16-byte aligned";
    for (int d = 0; d < 3; ++d) {
      if (t->strides[d] % 16 != 0) return "cache strides not multiples of 16 codes";
    }
  }
  if (table->shape[1] > 1 && table->strides[1] != 1) return "block_table rows not contiguous";
  return nullptr;
}

xhal_status fp8_decode(const xhal_op_call* c, char* msg, size_t len) {
  return kernels::float_dtype_of(c->tensors[XHAL_PAGED_ATTENTION_Q]) == XHAL_DTYPE_F16
             ? PagedDecode<F16, true>::run(c, msg, len)
             : PagedDecode<BF16, true>::run(c, msg, len);  // f32 q: declined by fp8_decode_supports
}
#endif

template <class E>
using PagedDecode16 = PagedDecode<E>;

}  // namespace

XHAL_REGISTER_KERNELS(host) {
#if !defined(__HIPCC__)
  kernels::register_kernel(host, "cuda.paged_decode_fp8_cache", XHAL_OP_PAGED_ATTENTION, XHAL_DTYPE_F8_E4M3,
                           &on_call_device<&fp8_decode>, accuracy_for(XHAL_DTYPE_BF16),
                           {10, false, fp8_decode_supports});
#endif
  register_float_kernels<GenericPagedAttention>(host, XHAL_GPU_BACKEND ".paged_attention_generic",
                                                XHAL_OP_PAGED_ATTENTION, {0, true, generic_supports});
  register_half_kernels<PagedDecode16>(host, XHAL_GPU_BACKEND ".paged_decode_split_kv", XHAL_OP_PAGED_ATTENTION,
                                       {10, false, decode_supports});
}

}  // namespace xhal::gpu

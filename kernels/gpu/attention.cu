// attention, attention_varlen and paged_prefill on the GPU: the tensor-core flash kernel (flash_attention.cuh)
// for f16/bf16 with the head dims and alignment it supports, the generic kernel
// (attention_generic.cuh) for everything else.
#include "attention_generic.cuh"
#include "varlen_tail.cuh"
#include "flash_attention.cuh"
#include "attention_tiles.hpp"
#include "flash_launch.cuh"

namespace xhal::gpu {
namespace {

// One warp per (sequence, query head, row); rows index up to max_rows per sequence.
// pages.table null: k and v are dense; else the paged caches, pages.table the block table's first
// row and table_row its row stride.
template <class E>
__global__ void __launch_bounds__(kGenericWarps* kWarpSize)
    generic_attention_kernel(const typename E::T* q, const typename E::T* k, const typename E::T* v, typename E::T* out,
                             float* lse, AttnLayout a, Sequences seqs, int64_t max_rows, Mask mask,
                             PagedKeys<typename E::T> pages, int64_t table_row) {
  extern __shared__ float q_shared[];
  const int warp = threadIdx.x / kWarpSize;
  const int64_t tasks = seqs.batch * a.Hq * max_rows;
  for (int64_t task = int64_t(blockIdx.x) * kGenericWarps + warp; task < tasks;
       task += int64_t(gridDim.x) * kGenericWarps) {
    const int64_t i = task % max_rows, h = task / max_rows % a.Hq, b = task / max_rows / a.Hq;
    int64_t q0, Sq, k0, Sk;
    seqs.span(b, &q0, &Sq, &k0, &Sk);
    if (i >= Sq) continue;
    int64_t lo, hi;
    mask.visible(i, Sq, Sk, &lo, &hi);
    const int64_t hk = h / a.group, row = q0 + i;
    auto attend = [&](const auto& src) {
      attend_row<E>(q + b * a.q[0] + row * a.q[1] + h * a.q[2], a.D, a.Dv, lo, hi, mask, src,
                    out + b * a.o[0] + row * a.o[1] + h * a.o[2],
                    lse ? lse + b * a.lse[0] + h * a.lse[1] + row * a.lse[2] : nullptr, q_shared + warp * a.D);
    };
    if (pages.table == nullptr) {
      attend(DenseKeys<typename E::T>{k + b * a.k[0] + k0 * a.k[1] + hk * a.k[2],
                                      v + b * a.v[0] + k0 * a.v[1] + hk * a.v[2], a.k[1], a.v[1]});
    } else {
      PagedKeys<typename E::T> src = pages;
      src.k = k + hk * a.k[2];
      src.v = v + hk * a.v[2];
      src.table = pages.table + b * table_row;
      attend(src);
    }
  }
}

template <class E>
xhal_status launch_generic(const xhal_op_call* c, const AttnProblem& problem, char* msg, size_t len) {
  using T = typename E::T;
  const Sequences& seqs = problem.seqs;
  const int64_t max_rows = problem.max_rows;
  const AttnLayout a = layout_of(c, problem.batched);
  const int64_t tasks = seqs.batch * a.Hq * max_rows;
  if (tasks == 0) return XHAL_OK;
  const size_t shared = size_t(kGenericWarps) * a.D * sizeof(float);
  if (shared > 48 * 1024) allow_shared_bytes(generic_attention_kernel<E>, shared);
  const DLTensor* lse = c->tensors[XHAL_ATTENTION_LSE];
  PagedKeys<T> pages{};
  int64_t table_row = 0;
  if (c->op == XHAL_OP_PAGED_PREFILL) {
    const DLTensor *kc = c->tensors[XHAL_PAGED_PREFILL_K_CACHE], *table = c->tensors[XHAL_PAGED_PREFILL_BLOCK_TABLE];
    pages = {nullptr, nullptr, static_cast<const int32_t*>(table->data), kc->shape[1], kc->shape[0], a.k[0], a.k[1],
             a.v[0],  a.v[1]};
    table_row = table->strides[0];
  }
  generic_attention_kernel<E><<<grid_for(tasks, kGenericWarps, int64_t(1) << 20), kGenericWarps * kWarpSize, shared,
                                static_cast<gpuStream_t>(c->stream)>>>(
      static_cast<const T*>(c->tensors[XHAL_ATTENTION_Q]->data),
      static_cast<const T*>(c->tensors[XHAL_ATTENTION_K]->data),
      static_cast<const T*>(c->tensors[XHAL_ATTENTION_V]->data), static_cast<T*>(c->tensors[XHAL_ATTENTION_OUT]->data),
      lse ? static_cast<float*>(lse->data) : nullptr, a, seqs, max_rows, Mask::from(c->params), pages, table_row);
  return launch_status(msg, len, "generic attention");
}

template <class E>
struct GenericAttention {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    return launch_generic<E>(c, dense_problem(c), msg, len);
  }
};

// cu_seqlens stay on the device: sequences longer than max_seqlen_q are cut at it, and offsets
// are trusted (docs/ops.md); rows past the last sequence are written as rows that see no key.
template <class E>
struct GenericAttentionVarlen {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    if (const xhal_status s = launch_generic<E>(c, varlen_problem(c), msg, len); s != XHAL_OK) return s;
    launch_uncovered_rows<E>(c);
    return launch_status(msg, len, "attention_varlen's rows past the last sequence");
  }
};

// paged_prefill: as attention_varlen, keys through the block table (whose rows must be contiguous
// here); block indices outside the cache make their keys unreadable (skipped), lengths are clamped
// to what the table addresses (docs/ops.md).
template <class E>
struct GenericPagedPrefill {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    const DLTensor* table = c->tensors[XHAL_PAGED_PREFILL_BLOCK_TABLE];
    if (table->shape[1] > 1 && table->strides[1] != 1) {
      return kernels::kernel_error(msg, len, XHAL_ERR_UNSUPPORTED,
                                   "paged_prefill: block_table rows must be contiguous on the GPU");
    }
    if (const xhal_status s = launch_generic<E>(c, paged_problem(c), msg, len); s != XHAL_OK) return s;
    launch_uncovered_rows<E>(c);
    return launch_status(msg, len, "paged_prefill's rows past the last sequence");
  }
};

#if !defined(__HIPCC__)
// The mma.sync kernel's tile for head dim D: its row of attention_tiles.hpp.
template <int D>
using MmaForwardTile = FlashTile<D, attention_tiles::find(attention_tiles::kMmaForward, D).block_n,
                                 attention_tiles::find(attention_tiles::kMmaForward, D).extra>;
static_assert(MmaForwardTile<128>::kBlockM == attention_tiles::find(attention_tiles::kMmaForward, 128).block_m &&
                  MmaForwardTile<256>::kBlockM == attention_tiles::find(attention_tiles::kMmaForward, 256).block_m,
              "the table's rows a block are the tile's");

// The mma.sync kernel for each head dim (attention_tiles.hpp); Kernels: the dense kernels or the
// paged ones.
template <template <class, class, bool> class Kernels>
struct MmaFlashFamily {
  static constexpr const char* kName = "flash attention";
  template <class E>
  static const char* launch(const xhal_op_call* c, const AttnLayout& a, const Sequences& seqs, int64_t max_rows) {
    switch (a.D) {
      case 64: launch_flash_tile<E, Kernels, MmaForwardTile<64>>(c, a, seqs, max_rows); break;
      case 80: launch_flash_tile<E, Kernels, MmaForwardTile<80>>(c, a, seqs, max_rows); break;
      case 96: launch_flash_tile<E, Kernels, MmaForwardTile<96>>(c, a, seqs, max_rows); break;
      case 128: launch_flash_tile<E, Kernels, MmaForwardTile<128>>(c, a, seqs, max_rows); break;
      default: launch_flash_tile<E, Kernels, MmaForwardTile<256>>(c, a, seqs, max_rows); break;
    }
    return nullptr;
  }
};
using MmaFlash = MmaFlashFamily<MmaFlashKernels>;
using MmaPagedFlash = MmaFlashFamily<MmaPagedFlashKernels>;

template <class E>
using MmaFlashDense = FlashDense<MmaFlash, E>;
template <class E>
using MmaFlashVarlen = FlashVarlen<MmaFlash, E>;
template <class E>
using MmaFlashPagedPrefill = FlashPagedPrefill<MmaPagedFlash, E>;
#endif

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  const kernels::KernelTraits generic{0, true, generic_supports};
  register_float_kernels<GenericAttention>(host, XHAL_GPU_BACKEND ".attention_generic", XHAL_OP_ATTENTION, generic);
  register_float_kernels<GenericPagedPrefill>(host, XHAL_GPU_BACKEND ".paged_prefill_generic", XHAL_OP_PAGED_PREFILL,
                                              generic);
  register_float_kernels<GenericAttentionVarlen>(host, XHAL_GPU_BACKEND ".attention_varlen_generic",
                                                 XHAL_OP_ATTENTION_VARLEN, generic);
#if !defined(__HIPCC__)
  const kernels::KernelTraits flash{10, false, flash_supports};
  register_half_kernels<MmaFlashDense>(host, "cuda.flash_attention_mma", XHAL_OP_ATTENTION, flash);
  register_half_kernels<MmaFlashVarlen>(host, "cuda.flash_attention_varlen_mma", XHAL_OP_ATTENTION_VARLEN, flash);
  register_half_kernels<MmaFlashPagedPrefill>(host, "cuda.paged_prefill_mma", XHAL_OP_PAGED_PREFILL, flash);
#endif
}

}  // namespace xhal::gpu

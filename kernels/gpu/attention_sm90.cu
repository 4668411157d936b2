// attention, attention_varlen and paged_prefill on Hopper (flash_attention_sm90.cuh: warp-specialised, TMA,
// wgmma): preferred over the mma.sync kernel on sm_90 devices for D = 64, 128 and 256 when the plugin
// carries sm_90a code.
#include "flash_attention_sm90.cuh"
#include "attention_tiles.hpp"
#include "flash_launch.cuh"
#include "tma_map.cuh"

namespace xhal::gpu {
namespace {

const char* wgmma_supports(void*, const xhal_op_call* c) {
  if (const char* why = flash_supports(nullptr, c)) return why;
  const DLTensor* q = c->tensors[XHAL_ATTENTION_Q];
  const int64_t D = q->shape[q->ndim - 1];
  if (D != 64 && D != 128 && D != 256) return "head dim not 64, 128 or 256";
  if (const char* why = rows_map_unsupported({q, c->tensors[XHAL_ATTENTION_K], c->tensors[XHAL_ATTENTION_V]})) {
    return why;
  }
  if (!is_sm90(c->device)) return "device is not sm_90 (wgmma)";
  if (c->op == XHAL_OP_PAGED_PREFILL) {
    const int64_t block_size = c->tensors[XHAL_PAGED_PREFILL_K_CACHE]->shape[1];
    // A tile of 128 keys (64 at D = 256) is whole pages or lies within one; TMA's 128-byte swizzle
    // needs pages of 8 rows or more (a page's rows start on a 1024-byte boundary of the tile).
    if (block_size < 8 || (block_size & (block_size - 1)) != 0) return "block size not a power of two >= 8";
  }
  return nullptr;
}

// TMA maps of q, k and v for this call, then the grid of Kernels (dense or paged).
template <class E, template <class, class, bool> class Kernels, class Tile>
const char* launch_wgmma_tile(const xhal_op_call* c, const AttnLayout& a, const Sequences& seqs, int64_t max_rows) {
  using T = typename E::T;
  const bool batched = seqs.cu_q == nullptr, bf16 = E::kDType == XHAL_DTYPE_BF16;
  AttnMaps maps;
  maps.pages = key_pages(c);
  // Paged caches map as batched tensors: [blocks][slots][heads][cols], a box a page or a tile.
  const bool paged = maps.pages.table != nullptr;
  const int kv_box = paged && maps.pages.block_size < Tile::kBlockN ? maps.pages.block_size : Tile::kBlockN;
  if (!encode_rows_map(&maps.q, c->tensors[XHAL_ATTENTION_Q], batched, Tile::kBlockM, bf16) ||
      !encode_rows_map(&maps.k, c->tensors[XHAL_ATTENTION_K], batched || paged, kv_box, bf16) ||
      !encode_rows_map(&maps.v, c->tensors[XHAL_ATTENTION_V], batched || paged, kv_box, bf16)) {
    return "the driver refused a TMA map of q, k or v";
  }
  const int64_t m_tiles = (max_rows + Tile::kBlockM - 1) / Tile::kBlockM;
  const DLTensor* lse = c->tensors[XHAL_ATTENTION_LSE];
  flash_kernel_for<E, Kernels, Tile>(
      c)<<<flash_grid(a, seqs, m_tiles), Tile::kThreads, Tile::kSharedBytes, static_cast<gpuStream_t>(c->stream)>>>(
      maps, static_cast<const T*>(c->tensors[XHAL_ATTENTION_V]->data),
      static_cast<T*>(c->tensors[XHAL_ATTENTION_OUT]->data), lse ? static_cast<float*>(lse->data) : nullptr, a, seqs,
      Mask::from(c->params), m_tiles);
  return nullptr;
}

// The tile for head dim D: its row of attention_tiles.hpp.
template <int D>
using WgmmaForwardTile = WgmmaFlashTile<D, attention_tiles::find(attention_tiles::kWgmmaForward, D).block_n>;
static_assert(WgmmaForwardTile<256>::kBlockM == attention_tiles::find(attention_tiles::kWgmmaForward, 256).block_m,
              "the table's rows a block are the tile's");

template <template <class, class, bool> class Kernels>
struct WgmmaFlashFamily {
  static constexpr const char* kName = "flash attention (wgmma)";
  template <class E>
  static const char* launch(const xhal_op_call* c, const AttnLayout& a, const Sequences& seqs, int64_t max_rows) {
    if (a.D == 64) return launch_wgmma_tile<E, Kernels, WgmmaForwardTile<64>>(c, a, seqs, max_rows);
    if (a.D == 256) return launch_wgmma_tile<E, Kernels, WgmmaForwardTile<256>>(c, a, seqs, max_rows);
    return launch_wgmma_tile<E, Kernels, WgmmaForwardTile<128>>(c, a, seqs, max_rows);
  }
};
using WgmmaFlash = WgmmaFlashFamily<WgmmaFlashKernels>;
using WgmmaPagedFlash = WgmmaFlashFamily<WgmmaPagedFlashKernels>;
template <class E>
using WgmmaFlashDense = FlashDense<WgmmaFlash, E>;
template <class E>
using WgmmaFlashVarlen = FlashVarlen<WgmmaFlash, E>;
template <class E>
using WgmmaFlashPagedPrefill = FlashPagedPrefill<WgmmaPagedFlash, E>;

}  // namespace

XHAL_REGISTER_KERNELS(host) {
#if defined(XHAL_CUDA_SM90A)
  const kernels::KernelTraits wgmma{20, false, wgmma_supports};
  register_half_kernels<WgmmaFlashDense>(host, "cuda.flash_attention_wgmma", XHAL_OP_ATTENTION, wgmma);
  register_half_kernels<WgmmaFlashVarlen>(host, "cuda.flash_attention_varlen_wgmma", XHAL_OP_ATTENTION_VARLEN, wgmma);
  register_half_kernels<WgmmaFlashPagedPrefill>(host, "cuda.paged_prefill_wgmma", XHAL_OP_PAGED_PREFILL, wgmma);
#else
  (void)host;  // built without sm_90a code: the mma.sync kernel serves Hopper too
#endif
}

}  // namespace xhal::gpu

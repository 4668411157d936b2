// Host side shared by the flash-attention kernels (mma.sync and wgmma): the conditions they all
// need and the launch of one tile shape.
#pragma once

#if !defined(__HIPCC__)

#include "attention_layout.cuh"
#include "varlen_tail.cuh"

namespace xhal::gpu {

// The flash kernels' conditions: 16-bit types (they are only registered for them), D == Dv in
// {64, 80, 96, 128, 256}, 16-byte aligned q/k/v rows (cache rows for paged_prefill, whose block
// table rows must be contiguous) and 4-byte aligned output pairs.
inline const char* flash_supports(void*, const xhal_op_call* c) {
  const DLTensor *q = c->tensors[XHAL_ATTENTION_Q], *k = c->tensors[XHAL_ATTENTION_K],
                 *v = c->tensors[XHAL_ATTENTION_V];
  const DLTensor* out = c->tensors[XHAL_ATTENTION_OUT];
  const int64_t D = q->shape[q->ndim - 1];
  if (v->shape[v->ndim - 1] != D) return "value head dim differs from the query head dim";
  if (D != 64 && D != 80 && D != 96 && D != 128 && D != 256) return "head dim not in {64, 80, 96, 128, 256}";
  for (const DLTensor* t : {q, k, v}) {
    if (reinterpret_cast<uintptr_t>(t->data) % 16 != 0) return "q/k/v not 16-byte aligned";
    if (t->strides[t->ndim - 3] > (int64_t(1) << 24)) return "sequence stride above 2^24 elements";
    if (t->shape[t->ndim - 3] >= (int64_t(1) << 31)) return "more than 2^31 tokens";
    for (int d = 0; d + 1 < t->ndim; ++d) {
      if ((t->strides[d] * 2) % 16 != 0) return "q/k/v strides not multiples of 8 elements";
    }
  }
  if (reinterpret_cast<uintptr_t>(out->data) % 4 != 0) return "out not 4-byte aligned";
  for (int d = 0; d + 1 < out->ndim; ++d) {
    if (out->strides[d] % 2 != 0) return "out strides not even";
  }
  const Mask mask = Mask::from(c->params);
  if (mask.scale < 0.0f && mask.softcap == 0.0f) return "negative scale (the running max is of the unscaled scores)";
  if (c->op == XHAL_OP_PAGED_PREFILL) {
    const DLTensor* table = c->tensors[XHAL_PAGED_PREFILL_BLOCK_TABLE];
    if (table->shape[1] > 1 && table->strides[1] != 1) return "block_table rows not contiguous";
  }
  return nullptr;
}

// Kernels<E, Tile, softcap>::kernel for this call (both instantiations share one pointer type),
// with more than 48 KiB of shared memory opted in once per tile shape.
template <class E, template <class, class, bool> class Kernels, class Tile>
auto flash_kernel_for(const xhal_op_call* c) {
  static const bool shared_raised = [] {
    allow_shared_bytes(Kernels<E, Tile, true>::kernel, Tile::kSharedBytes);
    allow_shared_bytes(Kernels<E, Tile, false>::kernel, Tile::kSharedBytes);
    return true;
  }();
  (void)shared_raised;
  return kernels::op_params<xhal_attention_op_params>(c).softcap > 0.0f ? Kernels<E, Tile, true>::kernel
                                                                        : Kernels<E, Tile, false>::kernel;
}

// The (query tile, head, sequence) grid.
inline dim3 flash_grid(const AttnLayout& a, const Sequences& seqs, int64_t m_tiles) {
  return dim3(unsigned(m_tiles), unsigned(a.Hq), unsigned(seqs.batch));
}

// Launches Kernels<E, Tile, softcap>::kernel over the (query tile, head, sequence) grid.
template <class E, template <class, class, bool> class Kernels, class Tile>
void launch_flash_tile(const xhal_op_call* c, const AttnLayout& a, const Sequences& seqs, int64_t max_rows) {
  using T = typename E::T;
  const int64_t m_tiles = (max_rows + Tile::kBlockM - 1) / Tile::kBlockM;
  const DLTensor* lse = c->tensors[XHAL_ATTENTION_LSE];
  flash_kernel_for<E, Kernels, Tile>(
      c)<<<flash_grid(a, seqs, m_tiles), Tile::kThreads, Tile::kSharedBytes, static_cast<gpuStream_t>(c->stream)>>>(
      static_cast<const T*>(c->tensors[XHAL_ATTENTION_Q]->data),
      static_cast<const T*>(c->tensors[XHAL_ATTENTION_K]->data),
      static_cast<const T*>(c->tensors[XHAL_ATTENTION_V]->data), static_cast<T*>(c->tensors[XHAL_ATTENTION_OUT]->data),
      lse ? static_cast<float*>(lse->data) : nullptr, a, seqs, Mask::from(c->params), m_tiles, key_pages(c));
}

// The attention and attention_varlen entry points of a flash kernel family: Family::launch<E>
// picks the tile shape for the head dim and launches (or says why it could not); Family::kName
// names it in errors.
template <class Family, class E>
xhal_status run_flash(const xhal_op_call* c, const AttnProblem& problem, char* msg, size_t len) {
  const AttnLayout a = layout_of(c, problem.batched);
  if (problem.seqs.batch * a.Hq * problem.max_rows == 0) return XHAL_OK;
  if (const char* why = Family::template launch<E>(c, a, problem.seqs, problem.max_rows)) {
    return kernel_error(msg, len, XHAL_ERR_DEVICE, "%s: %s", Family::kName, why);
  }
  return launch_status(msg, len, Family::kName);
}

template <class Family, class E>
struct FlashDense {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    return run_flash<Family, E>(c, dense_problem(c), msg, len);
  }
};

// The packed-query ops: attention_varlen (varlen_problem) and paged_prefill (paged_problem, keys
// through the block table, lengths clamped to what it addresses). Offsets stay on the device:
// sequences longer than max_seqlen_q are cut at it (docs/ops.md); rows past the last sequence are
// written as rows that see no key (varlen_tail.cuh).
template <class Family, class E, AttnProblem (*kProblem)(const xhal_op_call*)>
struct FlashPacked {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    if (const xhal_status s = run_flash<Family, E>(c, kProblem(c), msg, len); s != XHAL_OK) return s;
    launch_uncovered_rows<E>(c);
    return launch_status(msg, len, "the rows past the last sequence");
  }
};
template <class Family, class E>
using FlashVarlen = FlashPacked<Family, E, varlen_problem>;
template <class Family, class E>
using FlashPagedPrefill = FlashPacked<Family, E, paged_problem>;

}  // namespace xhal::gpu

#endif

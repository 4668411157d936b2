// What the CPU's reference and SIMD optimizer kernels share (the math itself is
// kernels/optimizer_math.hpp's, shared with the GPU): AdamW's constants from the call, the split of
// a list's entries into ranges run in parallel, global_grad_norm's chunks.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernel_registration.hpp"
#include "kernels/optimizer_math.hpp"

namespace xhal::cpu {

// kernels::AdamWUpdate from the call: the learning rate and gradient scale from their device
// scalars when given (host memory on the CPU).
inline kernels::AdamWUpdate adamw_update_of(const xhal_op_call* c) {
  const auto& p = kernels::op_params<xhal_adamw_op_params>(c);
  const DLTensor* lr = c->tensors[XHAL_ADAMW_STEP_LR];
  const DLTensor* scale = c->tensors[XHAL_ADAMW_STEP_GRAD_SCALE];
  return kernels::AdamWUpdate::of(p, kernels::AdamWBiasCorrections::of(p),
                                  lr ? *static_cast<const float*>(lr->data) : p.lr,
                                  scale ? *static_cast<const float*>(scale->data) : 1.0f);
}

// Elements [i0, i1) of a list entry.
struct EntryRange {
  int64_t entry, i0, i1;
};

// Every entry of `list` (lengths from its tensors of `slot`) cut into ranges of `block` elements,
// entry by entry: a partition that depends on the lengths alone.
inline std::vector<EntryRange> split_entries(const kernels::ListCall& list, int slot, int64_t block) {
  std::vector<EntryRange> ranges;
  for (int64_t e = 0; e < list.entries(); ++e) {
    const int64_t n = list.length(slot, e);
    for (int64_t i0 = 0; i0 < n; i0 += block) ranges.push_back({e, i0, std::min(n, i0 + block)});
  }
  return ranges;
}

// adamw_step: update(buffers, i0, i1) over every entry's ranges in parallel (it must not throw).
template <class Update>
void adamw_by_ranges(const xhal_op_call* c, Update&& update) {
  constexpr int64_t kBlock = 1 << 14;  // elements per scheduled range (whole vectors)
  const kernels::ListCall list = kernels::adamw_list(c);
  std::vector<kernels::AdamWBuffers> buffers;
  for (int64_t e = 0; e < list.entries(); ++e) buffers.push_back(kernels::AdamWBuffers::of(list, e));
  const std::vector<EntryRange> ranges = split_entries(list, XHAL_ADAMW_STEP_PARAM, kBlock);
#pragma omp parallel for schedule(static)
  for (size_t r = 0; r < ranges.size(); ++r) update(buffers[size_t(ranges[r].entry)], ranges[r].i0, ranges[r].i1);
}

// global_grad_norm: every gradient in chunks of kNormChunk elements (split_entries), each chunk's
// sum of squares from chunk_sum(data, i0, i1) (f32; must not throw), in parallel; the sums added in
// chunk order in f64, so the bits do not depend on the thread count. Writes the norm and, when
// asked for, the clip scale.
inline constexpr int64_t kNormChunk = 1 << 16;

template <class ChunkSum>
void grad_norm_by_chunks(const xhal_op_call* c, ChunkSum&& chunk_sum) {
  const kernels::ListCall list = kernels::grad_norm_list(c);
  const std::vector<EntryRange> chunks = split_entries(list, XHAL_GLOBAL_GRAD_NORM_GRAD, kNormChunk);
  std::vector<float> sums(chunks.size());
#pragma omp parallel for schedule(static)
  for (size_t k = 0; k < chunks.size(); ++k) {
    sums[k] = chunk_sum(list.tensor(XHAL_GLOBAL_GRAD_NORM_GRAD, chunks[k].entry)->data, chunks[k].i0, chunks[k].i1);
  }
  double total = 0.0;
  for (const float s : sums) total += s;
  const float norm = float(std::sqrt(total));
  *static_cast<float*>(c->tensors[XHAL_GLOBAL_GRAD_NORM_NORM]->data) = norm;
  if (const DLTensor* clip = c->tensors[XHAL_GLOBAL_GRAD_NORM_CLIP_SCALE]) {
    *static_cast<float*>(clip->data) =
        kernels::clip_scale(norm, kernels::op_params<xhal_grad_norm_op_params>(c).max_norm);
  }
}

}  // namespace xhal::cpu

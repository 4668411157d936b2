// The generic attention kernel: one warp per (sequence, query head, query row), any head dims up
// to 8 * warp width, any strides, any dtype. Keys are streamed in chunks of one warp width with an
// online softmax (no score matrix in memory). It is the fallback that is always correct; the fast
// paths (tensor cores for prefill, split-KV decode) take the shapes they support.
#pragma once

#include <cmath>

#include "attention_layout.cuh"

namespace xhal::gpu {

inline constexpr int kGenericWarps = 4;  // warps per block
inline constexpr int kMaxValuesPerLane = 8;
inline constexpr int kGenericMaxHeadDim = 512;

// The key sources: rows of a tensor with a stride between keys, or of a paged cache through a
// sequence's row of the block table (a block index outside the cache makes its keys unreadable).
template <class T>
struct DenseKeys {
  const T* k;
  const T* v;
  int64_t k_seq_stride, v_seq_stride;  // per key
  __device__ const T* key(int64_t j) const { return k + j * k_seq_stride; }
  __device__ const T* value(int64_t j) const { return v + j * v_seq_stride; }
};

template <class T>
struct PagedKeys {
  const T* k;
  const T* v;
  const int32_t* table;  // this sequence's row of the block table
  int64_t block_size, num_blocks;
  int64_t k_block_stride, k_slot_stride, v_block_stride, v_slot_stride;
  __device__ const T* key(int64_t j) const {
    const int64_t block = table[j / block_size];
    return block >= 0 && block < num_blocks ? k + block * k_block_stride + (j % block_size) * k_slot_stride : nullptr;
  }
  __device__ const T* value(int64_t j) const {
    const int64_t block = table[j / block_size];
    return v + block * v_block_stride + (j % block_size) * v_slot_stride;
  }
};

// One query row against keys [lo, hi) of a key source. Src provides, for key j,
//   key(j) / value(j): const T* to the row (nullptr = unreadable, the key is skipped).
// q: the query row; out: the output row; lse: nullptr or where the log-sum-exp goes.
template <class E, class Src>
__device__ void attend_row(const typename E::T* q, int64_t D, int64_t Dv, int64_t lo, int64_t hi, const Mask& mask,
                           const Src& src, typename E::T* out, float* lse, float* q_shared) {
  const int lane = threadIdx.x % kWarpSize;
  for (int64_t d = lane; d < D; d += kWarpSize) q_shared[d] = E::load(q[d]) * mask.scale;
  warp_sync();
  float acc[kMaxValuesPerLane];
  for (int r = 0; r < kMaxValuesPerLane; ++r) acc[r] = 0.0f;
  float m = -INFINITY, l = 0.0f;
  for (int64_t j0 = lo; j0 < hi; j0 += kWarpSize) {
    const int64_t j = j0 + lane;
    const typename E::T* kr = j < hi ? src.key(j) : nullptr;
    float s = -INFINITY;
    if (kr != nullptr) {
      float dot = 0.0f;
      for (int64_t d = 0; d < D; ++d) dot += q_shared[d] * E::load(kr[d]);
      s = mask.softcap > 0.0f ? mask.softcap * tanhf(dot / mask.softcap) : dot;
    }
    // Nothing readable in this chunk when every score is -inf (a NaN score is not -inf, and the
    // max would pass over it).
    if (warp_max(s == -INFINITY ? 0.0f : 1.0f) == 0.0f) continue;
    const float chunk_max = warp_max(s);
    const float m_new = fmaxf(m, chunk_max);
    const float correction = __expf(m - m_new);
    const float p = s == -INFINITY ? 0.0f : __expf(s - m_new);
    l = l * correction + warp_sum(p);
    m = m_new;
    for (int r = 0; r < kMaxValuesPerLane; ++r) acc[r] *= correction;
    const int64_t chunk = hi - j0 < kWarpSize ? hi - j0 : kWarpSize;
    for (int jj = 0; jj < chunk; ++jj) {
      const float pj = warp_shfl(p, jj);
      if (pj == 0.0f) continue;  // uniform across the warp
      const typename E::T* vr = src.value(j0 + jj);
      for (int r = 0; r < kMaxValuesPerLane; ++r) {
        const int64_t dv = lane + int64_t(r) * kWarpSize;
        if (dv < Dv) acc[r] += pj * E::load(vr[dv]);
      }
    }
  }
  // l == 0: no visible key, 0 and lse = -inf; a NaN l (a NaN query or key) reaches both.
  const float inv = l == 0.0f ? 0.0f : 1.0f / l;
  for (int r = 0; r < kMaxValuesPerLane; ++r) {
    const int64_t dv = lane + int64_t(r) * kWarpSize;
    if (dv < Dv) out[dv] = E::store(acc[r] * inv);
  }
  if (lse != nullptr && lane == 0) *lse = l == 0.0f ? -INFINITY : m + logf(l);
  warp_sync();
}

// supports() of the generic kernel.
inline const char* generic_supports(void*, const xhal_op_call* c) {
  const int64_t D = c->tensors[XHAL_ATTENTION_Q]->shape[c->tensors[XHAL_ATTENTION_Q]->ndim - 1];
  const int64_t Dv = c->tensors[XHAL_ATTENTION_V]->shape[c->tensors[XHAL_ATTENTION_V]->ndim - 1];
  if (D > kGenericMaxHeadDim) return "head dim above 512";
  if (Dv > int64_t(kMaxValuesPerLane) * kWarpSize) return "value head dim above 8 x warp width";
  return nullptr;
}

}  // namespace xhal::gpu

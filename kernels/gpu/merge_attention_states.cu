// merge_attention_states on any GPU: a group of up to a warp's threads per (token, head) row, each
// thread 16-byte vectors of it (scalars when rows are not aligned). Every thread of the group
// computes the row's weights (kernels/attention_merge.hpp) from the two lse values; one writes
// the merged lse, after the warp's reads of lse_a and lse_b (lse may be either of them).
#include "kernels/attention_merge.hpp"
#include "launch.cuh"

namespace xhal::gpu {
namespace {

// An [H, T] f32 tensor (any strides).
struct LseRef {
  float* data;
  int64_t head_stride, token_stride;
  __device__ float* at(int64_t h, int64_t t) const { return data + h * head_stride + t * token_stride; }
};

LseRef lse_ref(const DLTensor* t) {
  if (t == nullptr) return {nullptr, 0, 0};
  return {static_cast<float*>(t->data), t->strides[0], t->strides[1]};
}

template <class E, int VEC>
__global__ void merge_kernel(const typename E::T* out_a, RowLayout al, const typename E::T* out_b, RowLayout bl,
                             typename E::T* out, RowLayout ol, LseRef lse_a, LseRef lse_b, LseRef lse, uint32_t heads,
                             int group) {
  using T = typename E::T;
  const int rows_per_block = int(blockDim.x) / group, member = int(threadIdx.x) % group;
  const int64_t chunks = ol.cols / VEC;
  // Every thread takes the same number of steps (rows past the end included), so that the whole
  // warp reaches warp_sync.
  for (int64_t first = int64_t(blockIdx.x) * rows_per_block; first < ol.rows;
       first += int64_t(gridDim.x) * rows_per_block) {
    const int64_t r = first + int(threadIdx.x) / group;
    const bool valid = r < ol.rows;
    const uint32_t t = valid ? uint32_t(r) / heads : 0, h = valid ? uint32_t(r) % heads : 0;
    const kernels::MergeWeights w =
        valid ? kernels::merge_weights(*lse_a.at(h, t), *lse_b.at(h, t)) : kernels::MergeWeights{0, 0, 0};
    if (valid) {
      const T* a = out_a + al.offset(r);
      const T* b = out_b + bl.offset(r);
      T* o = out + ol.offset(r);
      const bool read_a = w.a != 0.0f, read_b = w.b != 0.0f;
      for (int64_t c = member; c < chunks; c += group) {
        Chunk<E, VEC> x, y, z;
        if (read_a) x.load(a + c * VEC);
        if (read_b) y.load(b + c * VEC);
        float v[VEC];
#pragma unroll
        for (int k = 0; k < VEC; ++k) {
          const float from_a = read_a ? w.a * x.get(k) : 0.0f;
          v[k] = read_b ? fmaf(w.b, y.get(k), from_a) : from_a;
        }
        z.set(v);
        z.store(o + c * VEC);
      }
    }
    warp_sync();
    if (valid && member == 0 && lse.data != nullptr) *lse.at(h, t) = w.lse;
  }
}

template <class E>
struct MergeAttentionStates {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    using T = typename E::T;
    const DLTensor* a = c->tensors[XHAL_MERGE_ATTENTION_STATES_OUT_A];
    const DLTensor* b = c->tensors[XHAL_MERGE_ATTENTION_STATES_OUT_B];
    const DLTensor* out = c->tensors[XHAL_MERGE_ATTENTION_STATES_OUT];
    const RowLayout ol = row_layout(out);
    if (ol.rows == 0) return XHAL_OK;
    if (ol.rows > int64_t(UINT32_MAX)) {
      return kernel_error(msg, len, XHAL_ERR_UNSUPPORTED, "merge_attention_states: more than 2^32 - 1 rows");
    }
    const bool vectorizable =
        rows_vectorizable(a, ol.cols) && rows_vectorizable(b, ol.cols) && rows_vectorizable(out, ol.cols);
    constexpr int kThreads = 256;
    const int vec = vectorizable ? Vec<E>::kVec : 1;
    int group = 1;  // threads per row: a power of two covering its chunks, at most a warp
    while (group < kWarpSize && group * vec < ol.cols) group *= 2;
    const unsigned grid = grid_for(ol.rows, kThreads / group, int64_t(1) << 20);
    auto go = [&](auto kernel) {
      kernel<<<grid, kThreads, 0, static_cast<gpuStream_t>(c->stream)>>>(
          static_cast<const T*>(a->data), row_layout(a), static_cast<const T*>(b->data), row_layout(b),
          static_cast<T*>(out->data), ol, lse_ref(c->tensors[XHAL_MERGE_ATTENTION_STATES_LSE_A]),
          lse_ref(c->tensors[XHAL_MERGE_ATTENTION_STATES_LSE_B]),
          lse_ref(kernels::tensor_at(c, XHAL_MERGE_ATTENTION_STATES_LSE)), uint32_t(out->shape[1]), group);
    };
    if (vectorizable) {
      go(merge_kernel<E, Vec<E>::kVec>);
    } else {
      go(merge_kernel<E, 1>);
    }
    return launch_status(msg, len, "merge_attention_states");
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<MergeAttentionStates>(host, XHAL_GPU_BACKEND ".merge_attention_states",
                                               XHAL_OP_MERGE_ATTENTION_STATES);
}

}  // namespace xhal::gpu

// merge_attention_states on any GPU: a group of up to a warp's threads per (token, head) row, each
// thread up to two 16-byte vectors of it (scalars when rows are not aligned). Every thread of the group
// computes the row's weights (kernels/attention_merge.hpp) from the two lse values; one writes
// the merged lse, after the warp's reads of lse_a and lse_b (lse may be either of them). The rows
// are loaded with the lse rather than after the weights: waiting for the lse first left the
// kernel at 0.59 of copy on an H200 (0.66 without the wait, before kChunksPerThread).
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

// Two chunks of each part in flight a thread, four blocks of 256 an SM (64 registers, no spill):
// on an H200 0.88-0.90 of copy, against 0.50 for one chunk at eight blocks (spilling), 0.85 for
// four chunks at two blocks and 0.69 for eight.
constexpr int kChunksPerThread = 2, kThreads = 256, kMinBlocks = 4;

template <class E, int VEC>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    merge_kernel(const typename E::T* out_a, RowLayout al, const typename E::T* out_b, RowLayout bl, typename E::T* out,
                 RowLayout ol, LseRef lse_a, LseRef lse_b, LseRef lse, uint32_t heads, int group) {
  using T = typename E::T;
  constexpr int K = kChunksPerThread;
  const int rows_per_block = int(blockDim.x) / group, member = int(threadIdx.x) % group;
  const int64_t chunks = ol.cols / VEC, pass = int64_t(group) * K;
  // Every thread takes the same number of steps (rows past the end included), so that the whole
  // warp reaches warp_sync.
  for (int64_t first = int64_t(blockIdx.x) * rows_per_block; first < ol.rows;
       first += int64_t(gridDim.x) * rows_per_block) {
    const int64_t r = first + int(threadIdx.x) / group;
    const bool valid = r < ol.rows;
    const uint32_t t = valid ? uint32_t(r) / heads : 0, h = valid ? uint32_t(r) % heads : 0;
    kernels::MergeWeights w{0, 0, 0};
    if (valid) {
      const float la = *lse_a.at(h, t), lb = *lse_b.at(h, t);
      const T* a = out_a + al.offset(r);
      const T* b = out_b + bl.offset(r);
      T* o = out + ol.offset(r);
      Chunk<E, VEC> x[K], y[K];
      // Chunks c0 + k * group of both parts. Both are read: a part whose weight is 0 is selected
      // away, never multiplied (it may hold NaN).
      auto load = [&](int64_t c0) {
#pragma unroll
        for (int k = 0; k < K; ++k) {
          const int64_t c = c0 + k * group;
          if (c < chunks) {
            x[k].load(a + c * VEC);
            y[k].load(b + c * VEC);
          }
        }
      };
      auto merge_store = [&](int64_t c0) {
        const bool read_a = w.a != 0.0f, read_b = w.b != 0.0f;
#pragma unroll
        for (int k = 0; k < K; ++k) {
          const int64_t c = c0 + k * group;
          if (c >= chunks) continue;
          float v[VEC];
#pragma unroll
          for (int e = 0; e < VEC; ++e) {
            const float from_a = read_a ? w.a * x[k].get(e) : 0.0f;
            v[e] = read_b ? fmaf(w.b, y[k].get(e), from_a) : from_a;
          }
          Chunk<E, VEC> z;
          z.set(v);
          z.store(o + c * VEC);
        }
      };
      // The first pass's rows are loaded before the weights wait on the lse, so that both travel
      // together; rows wider than one pass (past 512 bf16 values) take more passes.
      load(member);
      w = kernels::merge_weights(la, lb);
      merge_store(member);
      for (int64_t c0 = member + pass; c0 < chunks; c0 += pass) {
        load(c0);
        merge_store(c0);
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
    const int vec = vectorizable ? Vec<E>::kVec : 1;
    int group = 1;  // threads per row: a power of two covering its chunks in one pass, at most a warp
    while (group < kWarpSize && int64_t(group) * vec * kChunksPerThread < ol.cols) group *= 2;
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

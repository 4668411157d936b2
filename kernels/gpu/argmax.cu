// argmax on any GPU: each row's chunks split over gridDim.x blocks (several when there are fewer
// rows than multiprocessors, so that a decode step's few rows still use the whole GPU), each
// thread four 16-byte vectors in flight at a time (scalars when rows are not aligned), keeping the
// first largest value it saw and its first NaN; then warp shuffles and one pass over the warps'
// picks in argmax's order (kernels/argmax.hpp). With one block a row it writes the result;
// otherwise each block writes its pick and a warp per row combines them.
#include <algorithm>

#include "argmax_pick.cuh"
#include "launch.cuh"

namespace xhal::gpu {
namespace {

constexpr int kThreads = 1024, kChunksInFlight = 4, kMaxSplits = 2 * kWarpSize;

// Writes a row's result: its index, and the row's own element (not the f32 pick rounded back: the
// same bits, NaN payloads too).
template <class T>
__device__ inline void write_pick(const Pick& best, int64_t row, const T* r, void* indices, bool wide, T* values) {
  if (wide) {
    static_cast<int64_t*>(indices)[row] = best.index;
  } else {
    static_cast<int32_t*>(indices)[row] = int32_t(best.index);
  }
  if (values != nullptr) values[row] = r[best.index];
}

// Block (x, y): chunks [x * span, (x + 1) * span) of rows y, y + gridDim.y, ...
template <class E, int VEC>
__global__ void __launch_bounds__(kThreads)
    argmax_kernel(const typename E::T* logits, RowLayout ll, int64_t span, Pick* partial, void* indices, bool wide,
                  typename E::T* values) {
  __shared__ Pick warp_picks[kThreads / kWarpSize];
  const int64_t chunks = ll.cols / VEC, pass = int64_t(blockDim.x) * kChunksInFlight;
  const int64_t begin = int64_t(blockIdx.x) * span, end = begin + span < chunks ? begin + span : chunks;
  for (int64_t row = blockIdx.y; row < ll.rows; row += gridDim.y) {
    const typename E::T* r = logits + ll.offset(row);
    // A thread meets its positions in increasing order, so a strict > keeps the first of equal
    // values, and the first NaN is remembered apart: a few instructions an element (the full
    // order of argmax_before an element made the kernel instruction-bound).
    float largest = -INFINITY;
    int64_t largest_at = INT64_MAX, first_nan = INT64_MAX;  // INT64_MAX: none yet
    for (int64_t c0 = begin + threadIdx.x; c0 < end; c0 += pass) {
      Chunk<E, VEC> x[kChunksInFlight];
#pragma unroll
      for (int k = 0; k < kChunksInFlight; ++k) {
        const int64_t c = c0 + int64_t(k) * blockDim.x;
        if (c < end) x[k].load(r + c * VEC);
      }
#pragma unroll
      for (int k = 0; k < kChunksInFlight; ++k) {
        const int64_t c = c0 + int64_t(k) * blockDim.x;
        if (c >= end) continue;
        for (int e = 0; e < VEC; ++e) {
          const float v = x[k].get(e);
          if (v != v) {
            if (first_nan == INT64_MAX) first_nan = c * VEC + e;
          } else if (v > largest || largest_at == INT64_MAX) {
            largest = v;
            largest_at = c * VEC + e;
          }
        }
      }
    }
    Pick best = warp_pick(first_nan != INT64_MAX ? Pick{NAN, first_nan} : Pick{largest, largest_at});
    const int warp = int(threadIdx.x) / kWarpSize, warps = int(blockDim.x) / kWarpSize;
    if (threadIdx.x % kWarpSize == 0) warp_picks[warp] = best;
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int w = 1; w < warps; ++w) take_if_before(best, warp_picks[w]);
      if (partial != nullptr) {
        partial[row * gridDim.x + blockIdx.x] = best;
      } else {
        write_pick(best, row, r, indices, wide, values);
      }
    }
    __syncthreads();  // warp_picks is written again for the next row
  }
}

// One warp per row: the row's `splits` block picks (at most kMaxSplits) combined.
template <class T>
__global__ void combine_kernel(const Pick* partial, int splits, const T* logits, RowLayout ll, void* indices, bool wide,
                               T* values) {
  const int64_t row = int64_t(blockIdx.x) * (blockDim.x / kWarpSize) + threadIdx.x / kWarpSize;
  if (row >= ll.rows) return;
  const int lane = int(threadIdx.x) % kWarpSize;
  Pick best{-INFINITY, INT64_MAX};
  for (int s = lane; s < splits; s += kWarpSize) take_if_before(best, partial[row * splits + s]);
  best = warp_pick(best);
  if (lane == 0) write_pick(best, row, logits + ll.offset(row), indices, wide, values);
}

template <class E>
struct Argmax {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    using T = typename E::T;
    const DLTensor* logits = c->tensors[XHAL_ARGMAX_LOGITS];
    const DLTensor* indices = c->tensors[XHAL_ARGMAX_INDICES];
    const DLTensor* values = kernels::tensor_at(c, XHAL_ARGMAX_VALUES);
    const RowLayout ll = row_layout(logits);
    if (ll.rows == 0) return XHAL_OK;
    const bool vectorized = rows_vectorizable(logits, ll.cols);
    const int64_t chunks = ll.cols / (vectorized ? Vec<E>::kVec : 1);
    // Blocks a row: about two blocks a multiprocessor in all, each with at least a chunk a thread
    // of a 256-thread block, when that splits rows at least 8 ways. The second kernel costs a few
    // microseconds: on an H200, one row of 128256 took 9 µs split against 24 whole, but 64 rows
    // split 5 ways 25-30 µs against 21-26 whole.
    const int64_t want = (2 * int64_t(multiprocessor_count(c->device)) + ll.rows - 1) / ll.rows;
    const int64_t splits = want < 8 ? 1 : std::clamp<int64_t>(std::min<int64_t>(want, chunks / 256), 1, kMaxSplits);
    const int64_t span = (chunks + splits - 1) / splits;
    const int threads = block_threads((span + kChunksInFlight - 1) / kChunksInFlight, kThreads);
    auto stream = static_cast<gpuStream_t>(c->stream);
    void* scratch = nullptr;
    if (splits > 1) {
      if (const xhal_status s = c->host->scratch_alloc(c->host->ctx, c->device, size_t(ll.rows * splits) * sizeof(Pick),
                                                       c->stream, &scratch, msg, len);
          s != XHAL_OK) {
        return s;
      }
    }
    auto* partial = static_cast<Pick*>(scratch);
    const dim3 grid(unsigned(splits), unsigned(std::min<int64_t>(ll.rows, 65535)));
    auto go = [&](auto kernel) {
      kernel<<<grid, threads, 0, stream>>>(static_cast<const T*>(logits->data), ll, span, partial, indices->data,
                                           indices->dtype.bits == 64,
                                           values != nullptr ? static_cast<T*>(values->data) : nullptr);
    };
    if (vectorized) {
      go(argmax_kernel<E, Vec<E>::kVec>);
    } else {
      go(argmax_kernel<E, 1>);
    }
    xhal_status s = launch_status(msg, len, "argmax");
    if (splits > 1) {
      if (s == XHAL_OK) {
        constexpr int kRowsPerBlock = 4;
        combine_kernel<T><<<grid_for(ll.rows, kRowsPerBlock), kRowsPerBlock * kWarpSize, 0, stream>>>(
            partial, int(splits), static_cast<const T*>(logits->data), ll, indices->data, indices->dtype.bits == 64,
            values != nullptr ? static_cast<T*>(values->data) : nullptr);
        s = launch_status(msg, len, "argmax (combining the blocks' picks)");
      }
      // The allocator is stream-ordered: the picks are reused only after these kernels.
      c->host->scratch_free(c->host->ctx, c->device, scratch);
    }
    return s;
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) { register_float_kernels<Argmax>(host, XHAL_GPU_BACKEND ".argmax", XHAL_OP_ARGMAX); }

}  // namespace xhal::gpu

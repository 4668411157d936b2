// softmax on any GPU. Rows of up to 16 chunks a lane take a warp each and stay in its registers:
// one read, the max and the sum of exp(x - max) by shuffles, out = exp(x - lse). Longer rows take
// a block: a row's lse comes from running (max, sum of exp(x - max)) pairs, one a thread, merged
// across the block; then out = exp(x - lse) over the row, read a second time (mostly from L1 or
// L2). out may be x: in the second pass each thread rereads the chunks it writes. A few long rows
// (sampling's [B, V] logits) are split into spans over several blocks: one kernel writes each
// span's pair, a second merges a row's pairs and writes its span. 16-byte vectors when rows are
// aligned.
// Non-finite values as on the CPU (row_lse.hpp): a pair's sum takes no term from -inf and NaN
// from a NaN or +inf, so a row of -inf has lse -inf, one holding a NaN or +inf lse NaN, and both
// come out NaN.
#include <algorithm>
#include <cmath>

#include "launch.cuh"

namespace xhal::gpu {
namespace {

constexpr int kThreads = 512;
constexpr int kMaxSplits = 64;
constexpr int kInFlight = 2;  // chunks a thread loads before folding them into its pair

struct MaxSum {
  float max, sum;
};

// exp(x - max), 0 for x = -inf (whatever max: a masked entry adds nothing, even where every entry
// so far is masked and max is -inf too).
__device__ inline float exp_from(float x, float max) { return x == -INFINITY ? 0.0f : expf(x - max); }

__device__ inline MaxSum merged(MaxSum a, MaxSum b) {
  const float m = fmaxf(a.max, b.max);
  return {m, a.sum * exp_from(a.max, m) + b.sum * exp_from(b.max, m)};
}

// The pairs of the whole block merged in a fixed order (lanes by xor, then warps in order); every
// thread gets the result. `scratch` holds a pair per warp.
__device__ MaxSum block_merged(MaxSum v, MaxSum* scratch) {
  for (int m = kWarpSize / 2; m > 0; m /= 2) v = merged(v, {warp_shfl_xor(v.max, m), warp_shfl_xor(v.sum, m)});
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize,
            warps = (blockDim.x + kWarpSize - 1) / kWarpSize;
  __syncthreads();  // scratch may still be read by the previous row
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  MaxSum total = scratch[0];
  for (int w = 1; w < warps; ++w) total = merged(total, scratch[w]);
  return total;
}

// This thread's pair over chunks [begin, end) of a row, kInFlight chunks loaded at a time.
template <class E, int VEC>
__device__ MaxSum span_max_sum(const typename E::T* row, int64_t begin, int64_t end) {
  MaxSum acc{-INFINITY, 0.0f};
  for (int64_t c0 = begin + threadIdx.x; c0 < end; c0 += int64_t(kInFlight) * blockDim.x) {
    Chunk<E, VEC> v[kInFlight];
    bool has[kInFlight];
#pragma unroll
    for (int i = 0; i < kInFlight; ++i) {
      const int64_t c = c0 + int64_t(i) * blockDim.x;
      has[i] = c < end;
      if (has[i]) v[i].load(row + c * VEC);
    }
#pragma unroll
    for (int i = 0; i < kInFlight; ++i) {
      if (!has[i]) continue;
      float m = acc.max;
      for (int k = 0; k < VEC; ++k) m = fmaxf(m, v[i].get(k));
      float s = acc.sum * exp_from(acc.max, m);
      for (int k = 0; k < VEC; ++k) s += exp_from(v[i].get(k), m);
      acc = {m, s};
    }
  }
  return acc;
}

// out = exp(x - lse) over chunks [begin, end) of a row.
template <class E, int VEC>
__device__ void write_span(const typename E::T* row, typename E::T* out, int64_t begin, int64_t end, float lse) {
  for (int64_t c = begin + threadIdx.x; c < end; c += blockDim.x) {
    Chunk<E, VEC> v, o;
    v.load(row + c * VEC);
    float y[VEC];
    for (int k = 0; k < VEC; ++k) y[k] = expf(v.get(k) - lse);
    o.set(y);
    o.store(out + c * VEC);
  }
}

__device__ inline float lse_of(MaxSum t) { return t.max + logf(t.sum); }

constexpr int kMaxHeldChunks = 16;  // a lane's chunks in registers: 64 registers of 16-byte chunks
constexpr int kWarpRowsThreads = 256;  // about 100 registers a thread: two blocks a multiprocessor

// A warp a row, the row's kHeld * kWarpSize chunks (or fewer) in registers. The max ignores NaN
// (fmaxf) but the sum does not, so NaN and +inf rows still come out NaN, as the pairs do.
template <class E, int VEC, int kHeld>
__global__ void __launch_bounds__(kWarpRowsThreads)
    softmax_warp_rows_kernel(const typename E::T* x, RowLayout xl, typename E::T* out, RowLayout ol) {
  const int lane = threadIdx.x % kWarpSize;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / kWarpSize);
  const int64_t chunks = xl.cols / VEC;
  for (int64_t row = int64_t(blockIdx.x) * (blockDim.x / kWarpSize) + threadIdx.x / kWarpSize; row < xl.rows;
       row += warps) {
    const typename E::T* xr = x + xl.offset(row);
    Chunk<E, VEC> v[kHeld];
#pragma unroll
    for (int i = 0; i < kHeld; ++i) {
      if (lane + int64_t(i) * kWarpSize < chunks) v[i].load(xr + (lane + int64_t(i) * kWarpSize) * VEC);
    }
    float m = -INFINITY;
#pragma unroll
    for (int i = 0; i < kHeld; ++i) {
      if (lane + int64_t(i) * kWarpSize < chunks) {
        for (int k = 0; k < VEC; ++k) m = fmaxf(m, v[i].get(k));
      }
    }
    m = warp_max(m);
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < kHeld; ++i) {
      if (lane + int64_t(i) * kWarpSize < chunks) {
        for (int k = 0; k < VEC; ++k) s += exp_from(v[i].get(k), m);
      }
    }
    const float lse = lse_of({m, warp_sum(s)});
    typename E::T* orow = out + ol.offset(row);
#pragma unroll
    for (int i = 0; i < kHeld; ++i) {
      if (lane + int64_t(i) * kWarpSize < chunks) {
        float y[VEC];
        for (int k = 0; k < VEC; ++k) y[k] = expf(v[i].get(k) - lse);
        Chunk<E, VEC> o;
        o.set(y);
        o.store(orow + (lane + int64_t(i) * kWarpSize) * VEC);
      }
    }
  }
}

// The warp kernel holding `chunks` chunks a row: the fewest a lane that holds them.
template <class E, int VEC, int kHeld = 1>
void launch_warp_rows(int64_t chunks, unsigned grid, gpuStream_t stream, const typename E::T* x, RowLayout xl,
                      typename E::T* out, RowLayout ol) {
  if constexpr (kHeld < kMaxHeldChunks) {
    if (chunks > int64_t(kHeld) * kWarpSize) {
      launch_warp_rows<E, VEC, 2 * kHeld>(chunks, grid, stream, x, xl, out, ol);
      return;
    }
  }
  softmax_warp_rows_kernel<E, VEC, kHeld><<<grid, kWarpRowsThreads, 0, stream>>>(x, xl, out, ol);
}

// A block a row (blocks loop when rows outnumber the grid).
template <class E, int VEC>
__global__ void __launch_bounds__(kThreads)
    softmax_rows_kernel(const typename E::T* x, RowLayout xl, typename E::T* out, RowLayout ol) {
  __shared__ MaxSum scratch[kThreads / kWarpSize];
  const int64_t chunks = xl.cols / VEC;
  for (int64_t row = blockIdx.x; row < xl.rows; row += gridDim.x) {
    const typename E::T* xr = x + xl.offset(row);
    const MaxSum t = block_merged(span_max_sum<E, VEC>(xr, 0, chunks), scratch);
    write_span<E, VEC>(xr, out + ol.offset(row), 0, chunks, lse_of(t));
  }
}

// Block (s, r): span s (chunks [s span, (s + 1) span)) of row r, rows looping over gridDim.y.
template <class E, int VEC>
__global__ void __launch_bounds__(kThreads)
    softmax_span_sums_kernel(const typename E::T* x, RowLayout xl, int64_t span, MaxSum* partial) {
  __shared__ MaxSum scratch[kThreads / kWarpSize];
  const int64_t chunks = xl.cols / VEC, begin = int64_t(blockIdx.x) * span;
  const int64_t end = begin + span < chunks ? begin + span : chunks;
  for (int64_t row = blockIdx.y; row < xl.rows; row += gridDim.y) {
    const MaxSum t = block_merged(span_max_sum<E, VEC>(x + xl.offset(row), begin, end), scratch);
    if (threadIdx.x == 0) partial[row * gridDim.x + blockIdx.x] = t;
  }
}

template <class E, int VEC>
__global__ void __launch_bounds__(kThreads)
    softmax_span_write_kernel(const typename E::T* x, RowLayout xl, typename E::T* out, RowLayout ol, int64_t span,
                              const MaxSum* partial) {
  const int64_t chunks = xl.cols / VEC, begin = int64_t(blockIdx.x) * span;
  const int64_t end = begin + span < chunks ? begin + span : chunks;
  for (int64_t row = blockIdx.y; row < xl.rows; row += gridDim.y) {
    const MaxSum* pairs = partial + row * gridDim.x;
    MaxSum t = pairs[0];  // every block of the row merges its pairs in the same order
    for (unsigned s = 1; s < gridDim.x; ++s) t = merged(t, pairs[s]);
    write_span<E, VEC>(x + xl.offset(row), out + ol.offset(row), begin, end, lse_of(t));
  }
}

template <class E>
struct Softmax {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    using T = typename E::T;
    const DLTensor* x = c->tensors[XHAL_SOFTMAX_X];
    const DLTensor* out = c->tensors[XHAL_SOFTMAX_OUT];
    const RowLayout xl = row_layout(x), ol = row_layout(out);
    if (xl.rows == 0 || xl.cols == 0) return XHAL_OK;
    const bool vectorized = rows_vectorizable(x, xl.cols) && rows_vectorizable(out, xl.cols);
    const int64_t chunks = xl.cols / (vectorized ? Vec<E>::kVec : 1);
    // Spans when the rows give under two blocks a multiprocessor and are long enough for each span
    // to hold two chunks a thread of a full block.
    const int64_t want = (2 * int64_t(multiprocessor_count(c->device)) + xl.rows - 1) / xl.rows;
    const int64_t splits = std::clamp<int64_t>(std::min<int64_t>(want, chunks / (2 * kThreads)), 1, kMaxSplits);
    auto stream = static_cast<gpuStream_t>(c->stream);
    const auto* xd = static_cast<const T*>(x->data);
    auto* od = static_cast<T*>(out->data);
    if (chunks <= int64_t(kMaxHeldChunks) * kWarpSize) {
      const unsigned grid = grid_for(xl.rows, kWarpRowsThreads / kWarpSize, int64_t(1) << 20);
      if (vectorized) {
        launch_warp_rows<E, Vec<E>::kVec>(chunks, grid, stream, xd, xl, od, ol);
      } else {
        launch_warp_rows<E, 1>(chunks, grid, stream, xd, xl, od, ol);
      }
      return launch_status(msg, len, "softmax");
    }
    if (splits == 1) {
      auto go = [&](auto kernel) {
        kernel<<<grid_for(xl.rows, 1, int64_t(1) << 20), block_threads(chunks, kThreads), 0, stream>>>(xd, xl, od, ol);
      };
      if (vectorized) {
        go(softmax_rows_kernel<E, Vec<E>::kVec>);
      } else {
        go(softmax_rows_kernel<E, 1>);
      }
      return launch_status(msg, len, "softmax");
    }
    void* scratch = nullptr;
    if (const xhal_status s = c->host->scratch_alloc(c->host->ctx, c->device, size_t(xl.rows * splits) * sizeof(MaxSum),
                                                     c->stream, &scratch, msg, len);
        s != XHAL_OK) {
      return s;  // the allocator's message names the request
    }
    auto* partial = static_cast<MaxSum*>(scratch);
    const int64_t span = (chunks + splits - 1) / splits;
    const dim3 grid(unsigned(splits), unsigned(std::min<int64_t>(xl.rows, 65535)));
    auto go = [&](auto sums, auto write) {
      sums<<<grid, kThreads, 0, stream>>>(xd, xl, span, partial);
      write<<<grid, kThreads, 0, stream>>>(xd, xl, od, ol, span, partial);
    };
    if (vectorized) {
      go(softmax_span_sums_kernel<E, Vec<E>::kVec>, softmax_span_write_kernel<E, Vec<E>::kVec>);
    } else {
      go(softmax_span_sums_kernel<E, 1>, softmax_span_write_kernel<E, 1>);
    }
    const xhal_status s = launch_status(msg, len, "softmax (spans of a row over blocks)");
    c->host->scratch_free(c->host->ctx, c->device, scratch);  // stream-ordered: freed after the kernels
    return s;
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) { register_float_kernels<Softmax>(host, XHAL_GPU_BACKEND ".softmax", XHAL_OP_SOFTMAX); }

}  // namespace xhal::gpu

// argmax on any GPU: a block per row, each thread four 16-byte vectors of it in flight at a time
// (scalars when rows are not aligned), keeping the first largest value it saw and its first NaN;
// then warp shuffles and one pass over the warps' picks in argmax's order (kernels/argmax.hpp).
#include "kernels/argmax.hpp"
#include "launch.cuh"

namespace xhal::gpu {
namespace {

constexpr int kThreads = 1024, kChunksInFlight = 4;

struct Pick {
  float value;
  int64_t index;
};

__device__ inline void take_if_before(Pick& best, float value, int64_t index) {
  if (kernels::argmax_before(value, index, best.value, best.index)) best = {value, index};
}

// The pick of lane ^ mask (the index in two 32-bit halves).
__device__ inline Pick shfl_xor(const Pick& p, int mask) {
  const float lo = warp_shfl_xor(__int_as_float(int(uint32_t(p.index))), mask);
  const float hi = warp_shfl_xor(__int_as_float(int(uint32_t(uint64_t(p.index) >> 32))), mask);
  const uint64_t index = uint64_t(uint32_t(__float_as_int(lo))) | (uint64_t(uint32_t(__float_as_int(hi))) << 32);
  return {warp_shfl_xor(p.value, mask), int64_t(index)};
}

template <class E, int VEC>
__global__ void __launch_bounds__(kThreads)
    argmax_kernel(const typename E::T* logits, RowLayout ll, void* indices, bool wide, typename E::T* values) {
  __shared__ Pick warp_picks[kThreads / kWarpSize];
  const int64_t chunks = ll.cols / VEC, pass = int64_t(blockDim.x) * kChunksInFlight;
  for (int64_t row = blockIdx.x; row < ll.rows; row += gridDim.x) {
    const typename E::T* r = logits + ll.offset(row);
    // A thread meets its positions in increasing order, so a strict > keeps the first of equal
    // values, and the first NaN is remembered apart: a few instructions an element (the full
    // order of argmax_before an element made the kernel instruction-bound).
    float largest = -INFINITY;
    int64_t largest_at = INT64_MAX, first_nan = INT64_MAX;  // INT64_MAX: none yet
    for (int64_t c0 = threadIdx.x; c0 < chunks; c0 += pass) {
      Chunk<E, VEC> x[kChunksInFlight];
#pragma unroll
      for (int k = 0; k < kChunksInFlight; ++k) {
        const int64_t c = c0 + int64_t(k) * blockDim.x;
        if (c < chunks) x[k].load(r + c * VEC);
      }
#pragma unroll
      for (int k = 0; k < kChunksInFlight; ++k) {
        const int64_t c = c0 + int64_t(k) * blockDim.x;
        if (c >= chunks) continue;
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
    Pick best = first_nan != INT64_MAX ? Pick{NAN, first_nan} : Pick{largest, largest_at};
    for (int m = kWarpSize / 2; m > 0; m /= 2) {
      const Pick other = shfl_xor(best, m);
      take_if_before(best, other.value, other.index);
    }
    const int warp = int(threadIdx.x) / kWarpSize, warps = int(blockDim.x) / kWarpSize;
    if (threadIdx.x % kWarpSize == 0) warp_picks[warp] = best;
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int w = 1; w < warps; ++w) take_if_before(best, warp_picks[w].value, warp_picks[w].index);
      if (wide) {
        static_cast<int64_t*>(indices)[row] = best.index;
      } else {
        static_cast<int32_t*>(indices)[row] = int32_t(best.index);
      }
      // The row's own element, not the f32 pick rounded back: the same bits, NaN payloads too.
      if (values != nullptr) values[row] = r[best.index];
    }
    __syncthreads();  // warp_picks is written again for the next row
  }
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
    const int threads = block_threads(ll.cols / Vec<E>::kVec, kThreads);
    auto go = [&](auto kernel) {
      kernel<<<grid_for(ll.rows, 1), threads, 0, static_cast<gpuStream_t>(c->stream)>>>(
          static_cast<const T*>(logits->data), ll, indices->data, indices->dtype.bits == 64,
          values != nullptr ? static_cast<T*>(values->data) : nullptr);
    };
    if (rows_vectorizable(logits, ll.cols)) {
      go(argmax_kernel<E, Vec<E>::kVec>);
    } else {
      go(argmax_kernel<E, 1>);
    }
    return launch_status(msg, len, "argmax");
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) { register_float_kernels<Argmax>(host, XHAL_GPU_BACKEND ".argmax", XHAL_OP_ARGMAX); }

}  // namespace xhal::gpu

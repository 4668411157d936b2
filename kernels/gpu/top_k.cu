// top_k on any GPU, in argmax's order (kernels/argmax.hpp) as argmax ranks: a value's key and its
// position in one integer, the larger first.
// Long rows take a block a row: the k-th largest key by a radix select counting keys
// (radix_select.cuh), then one pass gathering the ranks of the elements at or above it into shared
// memory, sorted there (bitonic) and the first k written. When the ties at the k-th key do not fit
// the buffer, a second gather takes them in position order, only as many as the k need.
// Short rows with a small k (a mixture of experts' routing: 64-256 experts, k <= 8) take a warp a
// row: the row's ranks in registers, k rounds of a warp's largest rank, which its lane then drops.
#include "kernels/argmax.hpp"
#include "launch.cuh"
#include "radix_select.cuh"

namespace xhal::gpu {
namespace {

constexpr int kCandidates = XHAL_TOP_K_MAX_K;  // ranks a block sorts
constexpr int kWarpRowMaxK = 32, kWarpRowThreads = 256;

__device__ inline uint32_t key_of(float v) { return kernels::argmax_key(v); }

template <class E>
struct Output {
  typename E::T* values;
  void* indices;
  bool wide;
  int k;
  __device__ void write(int64_t r, int j, const typename E::T* row, uint64_t rank) const {
    const uint32_t position = kernels::rank_position(rank);
    const int64_t at = r * k + j;
    values[at] = row[position];
    if (wide) {
      static_cast<int64_t*>(indices)[at] = position;
    } else {
      static_cast<int32_t*>(indices)[at] = int32_t(position);
    }
  }
};

struct BlockShared {
  union {
    RadixShared radix;
    unsigned long long ranks[kCandidates];
  };
  unsigned int count;
  unsigned long long warp_ties[kSelectWarps];
};

// Sorts s[0, n) largest first, padding to a power of two with zeros (below every rank).
__device__ void sort_ranks(unsigned long long* s, unsigned n) {
  unsigned p = 1;
  while (p < n) p <<= 1;
  for (unsigned i = n + threadIdx.x; i < p; i += blockDim.x) s[i] = 0;
  __syncthreads();
  for (unsigned size = 2; size <= p; size <<= 1) {
    for (unsigned stride = size / 2; stride > 0; stride >>= 1) {
      for (unsigned i = threadIdx.x; i < p / 2; i += blockDim.x) {
        const unsigned lo = 2 * i - (i & (stride - 1)), hi = lo + stride;
        const unsigned long long a = s[lo], b = s[hi];
        if ((lo & size) == 0 ? a < b : a > b) {
          s[lo] = b;
          s[hi] = a;
        }
      }
      __syncthreads();
    }
  }
}

// The ranks of the elements above `key` and of the first `ties` equal to it by position: each
// warp's count of ties first, then its span in position order, a chunk a lane.
template <class E, int VEC>
__device__ void gather_in_position_order(const typename E::T* row, Span span, uint32_t key, unsigned long long ties,
                                         BlockShared& sh) {
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  unsigned long long mine = 0;
  each_in_span<E, VEC>(row, span, [&](float v, int64_t) { mine += key_of(v) == key ? 1 : 0; });
  mine = warp_inclusive_sum(mine);
  if (lane == kWarpSize - 1) sh.warp_ties[warp] = mine;
  if (threadIdx.x == 0) sh.count = 0;
  __syncthreads();
  unsigned long long before = 0;
  for (int w = 0; w < warp; ++w) before += sh.warp_ties[w];
  for (int64_t base = span.begin; base < span.end; base += kWarpSize) {
    const int64_t c = base + lane;
    Chunk<E, VEC> v;
    unsigned long long equal = 0;
    if (c < span.end) {
      v.load(row + c * VEC);
      for (int q = 0; q < VEC; ++q) equal += key_of(v.get(q)) == key ? 1 : 0;
    }
    const unsigned long long inclusive = warp_inclusive_sum(equal);
    unsigned long long order = before + inclusive - equal;
    if (c < span.end) {
      for (int q = 0; q < VEC; ++q) {
        const uint32_t kq = key_of(v.get(q));
        const bool take = kq > key || (kq == key && order++ < ties);
        if (take) sh.ranks[atomicAdd(&sh.count, 1u)] = kernels::argmax_rank(kq, uint32_t(c * VEC + q));
      }
    }
    before += shfl_u64(inclusive, kWarpSize - 1);
  }
  __syncthreads();
}

template <class E, int VEC>
__global__ void __launch_bounds__(kSelectThreads)
    top_k_block_kernel(const typename E::T* x, RowLayout xl, Output<E> out) {
  __shared__ BlockShared sh;
  const Span span = warp_span(xl.cols / VEC);
  const unsigned long long k = (unsigned long long)out.k;
  for (int64_t r = blockIdx.x; r < xl.rows; r += gridDim.x) {
    const typename E::T* row = x + xl.offset(r);
    const Selected kth = select_key<E, VEC>(
        row, span, [k](unsigned long long) { return k; }, 0, [](float v) { return key_of(v); },
        [](float) { return 1ull; }, sh.radix);
    if (threadIdx.x == 0) sh.count = 0;
    __syncthreads();  // the histograms are done with: their memory holds the ranks now
    each_in_span<E, VEC>(row, span, [&](float v, int64_t i) {
      const uint32_t key = key_of(v);
      if (key >= kth.key) {
        const unsigned slot = atomicAdd(&sh.count, 1u);
        if (slot < kCandidates) sh.ranks[slot] = kernels::argmax_rank(key, uint32_t(i));
      }
    });
    __syncthreads();
    unsigned n = sh.count;
    if (n > kCandidates) {
      gather_in_position_order<E, VEC>(row, span, kth.key, kth.need_at_key, sh);
      n = unsigned(k);
    }
    sort_ranks(sh.ranks, n);
    for (int j = threadIdx.x; j < out.k; j += blockDim.x) out.write(r, j, row, sh.ranks[j]);
    __syncthreads();  // the shared state is written again for the next row
  }
}

template <class E, int PER_LANE>
__global__ void __launch_bounds__(kWarpRowThreads)
    top_k_warp_kernel(const typename E::T* x, RowLayout xl, Output<E> out) {
  const int lane = threadIdx.x % kWarpSize, warps = blockDim.x / kWarpSize;
  for (int64_t r = int64_t(blockIdx.x) * warps + threadIdx.x / kWarpSize; r < xl.rows;
       r += int64_t(gridDim.x) * warps) {
    const typename E::T* row = x + xl.offset(r);
    unsigned long long ranks[PER_LANE];
#pragma unroll
    for (int q = 0; q < PER_LANE; ++q) {
      const int64_t i = lane + int64_t(q) * kWarpSize;
      ranks[q] = i < xl.cols ? kernels::argmax_rank(key_of(E::load(row[i])), uint32_t(i)) : 0;
    }
    for (int j = 0; j < out.k; ++j) {
      unsigned long long best = 0;
#pragma unroll
      for (int q = 0; q < PER_LANE; ++q) best = ranks[q] > best ? ranks[q] : best;
      for (int d = kWarpSize / 2; d > 0; d /= 2) {
        const unsigned long long other = shfl_u64(best, lane ^ d);
        best = other > best ? other : best;
      }
#pragma unroll
      for (int q = 0; q < PER_LANE; ++q) ranks[q] = ranks[q] == best ? 0 : ranks[q];
      if (lane == j % kWarpSize) out.write(r, j, row, best);
    }
  }
}

template <class E>
struct TopK {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    using T = typename E::T;
    const DLTensor* x = c->tensors[XHAL_TOP_K_X];
    const DLTensor* values = c->tensors[XHAL_TOP_K_VALUES];
    const DLTensor* indices = c->tensors[XHAL_TOP_K_INDICES];
    const RowLayout xl = row_layout(x);
    if (xl.rows == 0) return XHAL_OK;
    const Output<E> out{static_cast<T*>(values->data), indices->data, indices->dtype.bits == 64,
                        int(values->shape[values->ndim - 1])};
    const gpuStream_t stream = static_cast<gpuStream_t>(c->stream);
    auto by_warps = [&](auto kernel) {
      const int64_t rows_per_block = kWarpRowThreads / kWarpSize;
      kernel<<<grid_for((xl.rows + rows_per_block - 1) / rows_per_block, 1, int64_t(1) << 20), kWarpRowThreads, 0,
               stream>>>(static_cast<const T*>(x->data), xl, out);
    };
    auto by_blocks = [&](auto kernel) {
      kernel<<<grid_for(xl.rows, 1, int64_t(1) << 20), kSelectThreads, 0, stream>>>(static_cast<const T*>(x->data), xl,
                                                                                    out);
    };
    if (out.k <= kWarpRowMaxK && xl.cols <= 8 * kWarpSize) {
      by_warps(top_k_warp_kernel<E, 8>);
    } else if (out.k <= kWarpRowMaxK && xl.cols <= 32 * kWarpSize) {
      by_warps(top_k_warp_kernel<E, 32>);
    } else if (rows_vectorizable(x, xl.cols)) {
      by_blocks(top_k_block_kernel<E, Vec<E>::kVec>);
    } else {
      by_blocks(top_k_block_kernel<E, 1>);
    }
    return launch_status(msg, len, "top_k");
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) { register_float_kernels<TopK>(host, XHAL_GPU_BACKEND ".top_k", XHAL_OP_TOP_K); }

}  // namespace xhal::gpu

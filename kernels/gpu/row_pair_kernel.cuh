// out = f(a, b) element by element over rows, in f32 and rounded once: blocks loop over rows,
// threads over 16-byte vectors of a row (scalars when rows are not aligned), one read of a and b
// and one write of out. b is a's shape or a single row for every row of a (a broadcast row), and
// its row may start b_offset elements in (the packed gated ops' up half). The kernel of the gated
// activations (f = act(gate) up) and of the element-wise binary ops (add, mul).
#pragma once

#include "launch.cuh"

namespace xhal::gpu {

// Chunks of a and b a thread loads before computing any: one at a time left the loads of a
// 4096-wide row (two chunks a thread) one after the other.
constexpr int kRowPairChunksInFlight = 2;

template <class E, class F, int VEC>
__global__ void row_pair_kernel(const typename E::T* a, RowLayout al, const typename E::T* b, RowLayout bl,
                                int64_t b_offset, typename E::T* out, RowLayout ol) {
  using T = typename E::T;
  constexpr int kInFlight = kRowPairChunksInFlight;
  const int64_t vecs = ol.cols / VEC, pass = int64_t(blockDim.x) * kInFlight;
  const bool broadcast = bl.rows == 1;
  for (int64_t row = blockIdx.x; row < ol.rows; row += gridDim.x) {
    const T* x = a + al.offset(row);
    const T* y = b + (broadcast ? 0 : bl.offset(row)) + b_offset;
    T* o = out + ol.offset(row);
    for (int64_t c0 = threadIdx.x; c0 < vecs; c0 += pass) {
      Chunk<E, VEC> u[kInFlight], v[kInFlight];
#pragma unroll
      for (int k = 0; k < kInFlight; ++k) {
        const int64_t c = c0 + int64_t(k) * blockDim.x;
        if (c < vecs) {
          u[k].load(x + c * VEC);
          v[k].load(y + c * VEC);
        }
      }
#pragma unroll
      for (int k = 0; k < kInFlight; ++k) {
        const int64_t c = c0 + int64_t(k) * blockDim.x;
        if (c >= vecs) continue;
        float r[VEC];
#pragma unroll
        for (int e = 0; e < VEC; ++e) r[e] = F::apply(u[k].get(e), v[k].get(e));
        Chunk<E, VEC> z;
        z.set(r);
        z.store(o + c * VEC);
      }
    }
  }
}

// Launches row_pair_kernel over out's rows; `name` for the launch's error message.
template <class E, class F>
xhal_status launch_row_pairs(const xhal_op_call* c, const DLTensor* a, const DLTensor* b, int64_t b_offset,
                             const DLTensor* out, const char* name, char* msg, size_t len) {
  using T = typename E::T;
  const RowLayout ol = row_layout(out);
  if (ol.rows == 0 || ol.cols == 0) return XHAL_OK;
  const bool vectorizable = rows_vectorizable(a, ol.cols) && rows_vectorizable(out, ol.cols) &&
                            rows_vectorizable(b, ol.cols) && b_offset % Vec<E>::kVec == 0;
  const int threads = block_threads(ol.cols / 8, 256);
  const unsigned grid = grid_for(ol.rows, 1, int64_t(1) << 20);
  auto go = [&](auto kernel) {
    kernel<<<grid, threads, 0, static_cast<gpuStream_t>(c->stream)>>>(static_cast<const T*>(a->data), row_layout(a),
                                                                      static_cast<const T*>(b->data), row_layout(b),
                                                                      b_offset, static_cast<T*>(out->data), ol);
  };
  if (vectorizable) {
    go(row_pair_kernel<E, F, Vec<E>::kVec>);
  } else {
    go(row_pair_kernel<E, F, 1>);
  }
  return launch_status(msg, len, name);
}

}  // namespace xhal::gpu

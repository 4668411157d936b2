// The gated activations on the GPU (swiglu and gelu_and_mul, separate or packed): blocks loop over
// rows, threads over 16-byte vectors of a row (scalars when rows are not aligned). One read of gate
// and up, one write of out; the formulas of kernels/gated_activation.hpp.
#include "kernels/gated_activation.hpp"
#include "launch.cuh"

namespace xhal::gpu {
namespace {

// Chunks of gate and up a thread loads before computing any: one at a time left the loads of a
// 4096-wide row (two chunks a thread) one after the other.
constexpr int kChunksInFlight = 2;

template <class E, class Act, int VEC>
__global__ void gated_kernel(const typename E::T* gate, RowLayout gl, const typename E::T* up, RowLayout ul,
                             int64_t up_offset, typename E::T* out, RowLayout ol) {
  using T = typename E::T;
  const int64_t vecs = ol.cols / VEC, pass = int64_t(blockDim.x) * kChunksInFlight;
  for (int64_t row = blockIdx.x; row < ol.rows; row += gridDim.x) {
    const T* g = gate + gl.offset(row);
    const T* u = up + ul.offset(row) + up_offset;
    T* o = out + ol.offset(row);
    for (int64_t c0 = threadIdx.x; c0 < vecs; c0 += pass) {
      Chunk<E, VEC> x[kChunksInFlight], y[kChunksInFlight];
#pragma unroll
      for (int k = 0; k < kChunksInFlight; ++k) {
        const int64_t c = c0 + int64_t(k) * blockDim.x;
        if (c < vecs) {
          x[k].load(g + c * VEC);
          y[k].load(u + c * VEC);
        }
      }
#pragma unroll
      for (int k = 0; k < kChunksInFlight; ++k) {
        const int64_t c = c0 + int64_t(k) * blockDim.x;
        if (c >= vecs) continue;
        float v[VEC];
#pragma unroll
        for (int e = 0; e < VEC; ++e) v[e] = Act::apply(x[k].get(e)) * y[k].get(e);
        Chunk<E, VEC> z;
        z.set(v);
        z.store(o + c * VEC);
      }
    }
  }
}

// gate and up are separate tensors, or (packed) the two halves of one row.
template <class E>
struct GatedActivation {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    using T = typename E::T;
    const bool packed = kernels::gated_packed(c);
    const DLTensor* gate = c->tensors[XHAL_SWIGLU_GATE];
    const DLTensor* up = packed ? gate : c->tensors[XHAL_SWIGLU_UP];
    const DLTensor* out = c->tensors[XHAL_SWIGLU_OUT];
    const RowLayout ol = row_layout(out);
    if (ol.rows == 0 || ol.cols == 0) return XHAL_OK;
    const int64_t up_offset = packed ? ol.cols : 0;
    const bool vectorizable =
        rows_vectorizable(gate, ol.cols) && rows_vectorizable(out, ol.cols) && rows_vectorizable(up, ol.cols);
    const int threads = block_threads(ol.cols / 8, 256);
    const unsigned grid = grid_for(ol.rows, 1, int64_t(1) << 20);
    auto go = [&](auto kernel) {
      kernel<<<grid, threads, 0, static_cast<gpuStream_t>(c->stream)>>>(
          static_cast<const T*>(gate->data), row_layout(gate), static_cast<const T*>(up->data), row_layout(up),
          up_offset, static_cast<T*>(out->data), ol);
    };
    kernels::with_gated_activation(c, [&](auto act) {
      using Act = decltype(act);
      if (vectorizable)
        go(gated_kernel<E, Act, Vec<E>::kVec>);
      else
        go(gated_kernel<E, Act, 1>);
    });
    return launch_status(msg, len, kernels::gated_op_name(c));
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<GatedActivation>(host, XHAL_GPU_BACKEND ".swiglu", XHAL_OP_SWIGLU);
  register_float_kernels<GatedActivation>(host, XHAL_GPU_BACKEND ".swiglu_packed", XHAL_OP_SWIGLU_PACKED);
  register_float_kernels<GatedActivation>(host, XHAL_GPU_BACKEND ".gelu_and_mul", XHAL_OP_GELU_AND_MUL);
  register_float_kernels<GatedActivation>(host, XHAL_GPU_BACKEND ".gelu_and_mul_packed", XHAL_OP_GELU_AND_MUL_PACKED);
}

}  // namespace xhal::gpu

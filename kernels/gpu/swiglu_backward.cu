// swiglu_backward and swiglu_packed_backward on the GPU: blocks loop over rows, threads over 16-byte
// vectors of a row (scalars when rows are not aligned). One read of dout, gate and up, one write of
// dgate and dup; every input of a vector is loaded before its gradients are stored, so gradients
// may overwrite their inputs.
#include "launch.cuh"

namespace xhal::gpu {
namespace {

// Row tensors of the call; the packed op's up and dup are the second halves of x and dx.
struct SwigluBackwardArgs {
  const void* dout;
  RowLayout dl;
  const void* gate;
  RowLayout gl;
  const void* up;
  RowLayout ul;
  void* dgate;
  RowLayout dgl;
  void* dup;
  RowLayout dul;
  int64_t half;  // packed: offset of up in x's rows and of dup in dx's; else 0
};

template <class E, int VEC>
__global__ void swiglu_backward_kernel(SwigluBackwardArgs a) {
  using T = typename E::T;
  const int64_t vecs = a.dl.cols / VEC;
  for (int64_t row = blockIdx.x; row < a.dl.rows; row += gridDim.x) {
    const T* d = static_cast<const T*>(a.dout) + a.dl.offset(row);
    const T* g = static_cast<const T*>(a.gate) + a.gl.offset(row);
    const T* u = static_cast<const T*>(a.up) + a.ul.offset(row) + a.half;
    T* dg = static_cast<T*>(a.dgate) + a.dgl.offset(row);
    T* du = static_cast<T*>(a.dup) + a.dul.offset(row) + a.half;
    for (int64_t c = threadIdx.x; c < vecs; c += blockDim.x) {
      Chunk<E, VEC> dv, gv, uv, dgv, duv;
      dv.load(d + c * VEC), gv.load(g + c * VEC), uv.load(u + c * VEC);
      for (int k = 0; k < VEC; ++k) {
        const float x = gv.get(k), s = 1.0f / (1.0f + __expf(-x)), dy = dv.get(k);
        dgv.v.v[k] = E::store(dy * uv.get(k) * s * (1.0f + x * (1.0f - s)));
        duv.v.v[k] = E::store(dy * x * s);
      }
      dgv.store(dg + c * VEC);
      duv.store(du + c * VEC);
    }
  }
}

template <class E>
struct SwigluBackwardKernel {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    const bool packed = c->op == XHAL_OP_SWIGLU_PACKED_BACKWARD;
    const DLTensor* dout = c->tensors[XHAL_SWIGLU_BACKWARD_DOUT];
    const DLTensor* gate = c->tensors[XHAL_SWIGLU_BACKWARD_GATE];
    const DLTensor* dgate = c->tensors[XHAL_SWIGLU_BACKWARD_DGATE];
    const DLTensor* up = packed ? gate : c->tensors[XHAL_SWIGLU_BACKWARD_UP];
    const DLTensor* dup = packed ? dgate : c->tensors[XHAL_SWIGLU_BACKWARD_DUP];
    const SwigluBackwardArgs a{dout->data,
                               row_layout(dout),
                               gate->data,
                               row_layout(gate),
                               up->data,
                               row_layout(up),
                               dgate->data,
                               row_layout(dgate),
                               dup->data,
                               row_layout(dup),
                               packed ? dout->shape[dout->ndim - 1] : 0};
    const int64_t cols = a.dl.cols;
    if (a.dl.rows == 0 || cols == 0) return XHAL_OK;
    bool vectorizable = true;
    for (const DLTensor* t : {dout, gate, up, dgate, dup}) vectorizable = vectorizable && rows_vectorizable(t, cols);
    const int threads = block_threads(cols / 8, 256);
    const unsigned grid = grid_for(a.dl.rows, 1, int64_t(1) << 20);
    auto stream = static_cast<gpuStream_t>(c->stream);
    if (vectorizable)
      swiglu_backward_kernel<E, Vec<E>::kVec><<<grid, threads, 0, stream>>>(a);
    else
      swiglu_backward_kernel<E, 1><<<grid, threads, 0, stream>>>(a);
    return launch_status(msg, len, packed ? "swiglu_packed_backward" : "swiglu_backward");
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<SwigluBackwardKernel>(host, XHAL_GPU_BACKEND ".swiglu_backward", XHAL_OP_SWIGLU_BACKWARD);
  register_float_kernels<SwigluBackwardKernel>(host, XHAL_GPU_BACKEND ".swiglu_packed_backward",
                                               XHAL_OP_SWIGLU_PACKED_BACKWARD);
}

}  // namespace xhal::gpu

// layer_norm on any GPU: a block per row (blocks loop when rows outnumber the grid), 16-byte vectors
// when rows are aligned. Three passes over the row, the second and third from L1 or L2: its sum,
// the sum of squared deviations from the mean (no cancellation of E[x^2] - mean^2), and the output.
// A first version: rms_norm's rows-in-registers kernels are the model for a faster one.
#include "launch.cuh"

namespace xhal::gpu {
namespace {

constexpr int kThreads = 512;

template <class E, int VEC>
__global__ void __launch_bounds__(kThreads)
    layer_norm_kernel(const typename E::T* x, RowLayout xl, const typename E::T* weight, const typename E::T* bias,
                      typename E::T* out, RowLayout ol, float eps) {
  __shared__ float scratch[kThreads / kWarpSize];
  const int64_t chunks = xl.cols / VEC;
  for (int64_t row = blockIdx.x; row < xl.rows; row += gridDim.x) {
    const typename E::T* xr = x + xl.offset(row);
    float sum = 0.0f;
    for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      Chunk<E, VEC> v;
      v.load(xr + c * VEC);
      for (int k = 0; k < VEC; ++k) sum += v.get(k);
    }
    const float mean = block_sum(sum, scratch) / float(xl.cols);
    float squares = 0.0f;
    for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      Chunk<E, VEC> v;
      v.load(xr + c * VEC);
      for (int k = 0; k < VEC; ++k) squares += (v.get(k) - mean) * (v.get(k) - mean);
    }
    const float inv_std = rsqrtf(block_sum(squares, scratch) / float(xl.cols) + eps);
    typename E::T* orow = out + ol.offset(row);
    for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      Chunk<E, VEC> v, w, b;
      v.load(xr + c * VEC);
      w.load(weight + c * VEC);
      if (bias != nullptr) b.load(bias + c * VEC);
      float y[VEC];
      for (int k = 0; k < VEC; ++k) {
        y[k] = (v.get(k) - mean) * inv_std * w.get(k);
        if (bias != nullptr) y[k] += b.get(k);
      }
      Chunk<E, VEC> o;
      o.set(y);
      o.store(orow + c * VEC);
    }
  }
}

template <class E>
struct LayerNorm {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    using T = typename E::T;
    const DLTensor* x = c->tensors[XHAL_LAYER_NORM_X];
    const DLTensor* weight = c->tensors[XHAL_LAYER_NORM_WEIGHT];
    const DLTensor* bias = kernels::tensor_at(c, XHAL_LAYER_NORM_BIAS);
    const DLTensor* out = c->tensors[XHAL_LAYER_NORM_OUT];
    const RowLayout xl = row_layout(x);
    if (xl.rows == 0 || xl.cols == 0) return XHAL_OK;
    const bool vectorizable = rows_vectorizable(x, xl.cols) && rows_vectorizable(out, xl.cols) &&
                              rows_vectorizable(weight, xl.cols) &&
                              (bias == nullptr || rows_vectorizable(bias, xl.cols));
    const int threads = block_threads(xl.cols / Vec<E>::kVec, kThreads);
    auto go = [&](auto kernel) {
      kernel<<<grid_for(xl.rows, 1, int64_t(1) << 20), threads, 0, static_cast<gpuStream_t>(c->stream)>>>(
          static_cast<const T*>(x->data), xl, static_cast<const T*>(weight->data),
          bias != nullptr ? static_cast<const T*>(bias->data) : nullptr, static_cast<T*>(out->data), row_layout(out),
          kernels::op_params<xhal_norm_op_params>(c).eps);
    };
    if (vectorizable) {
      go(layer_norm_kernel<E, Vec<E>::kVec>);
    } else {
      go(layer_norm_kernel<E, 1>);
    }
    return launch_status(msg, len, "layer_norm");
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<LayerNorm>(host, XHAL_GPU_BACKEND ".layer_norm", XHAL_OP_LAYER_NORM);
}

}  // namespace xhal::gpu

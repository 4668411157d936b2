// rms_norm and fused_add_rms_norm on the GPU: a grid sized to fill the GPU once, each block
// looping over rows with the weight held in registers (read once per block, not once per row).
// The row stays in registers between the reduction and the scaling, so x is read once; 16-byte
// vectors when rows are aligned, scalars otherwise. Rows too long for registers take a second pass.
#include "launch.cuh"

namespace xhal::gpu {
namespace {

// VPT: vectors held per thread; 0 = the row does not fit, read it twice.
template <class E, int VEC, int VPT>
__global__ void rms_norm_kernel(const typename E::T* __restrict__ x, RowLayout xl,
                                const typename E::T* __restrict__ weight, typename E::T* out,
                                RowLayout ol, typename E::T* residual, RowLayout rl, float eps) {
  using T = typename E::T;
  __shared__ float scratch[1024 / kWarpSize];
  const int64_t cols = xl.cols, vecs = cols / VEC;
  constexpr int kSlots = VPT > 0 ? VPT : 1;
  float w_held[kSlots][VEC];
  if constexpr (VPT > 0) {
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
      const int64_t c = int64_t(i) * blockDim.x + threadIdx.x;
      if (c >= vecs) continue;
      if constexpr (VEC > 1) {
        auto vw = Vec<E>::load_from(weight + c * VEC);
        for (int k = 0; k < VEC; ++k) w_held[i][k] = E::load(vw.v[k]);
      } else {
        w_held[i][0] = E::load(weight[c]);
      }
    }
  }
  for (int64_t row = blockIdx.x; row < xl.rows; row += gridDim.x) {
    const T* xr = x + xl.offset(row);
    T* rr = residual ? residual + rl.offset(row) : nullptr;
    float held[kSlots][VEC];
    float sumsq = 0.0f;
    // Loads x (+ residual, stored back rounded) for vector index c into v.
    auto load = [&](int64_t c, float* v) {
      T in[VEC];
      if constexpr (VEC > 1) {
        auto vx = Vec<E>::load_from(xr + c * VEC);
        for (int k = 0; k < VEC; ++k) in[k] = vx.v[k];
      } else {
        in[0] = xr[c];
      }
      for (int k = 0; k < VEC; ++k) v[k] = E::load(in[k]);
      if (rr != nullptr) {
        T sum[VEC];
        if constexpr (VEC > 1) {
          auto vr = Vec<E>::load_from(rr + c * VEC);
          for (int k = 0; k < VEC; ++k) sum[k] = E::store(v[k] + E::load(vr.v[k]));
          Vec<E> o;
          for (int k = 0; k < VEC; ++k) o.v[k] = sum[k];
          o.store_to(rr + c * VEC);
        } else {
          sum[0] = E::store(v[0] + E::load(rr[c]));
          rr[c] = sum[0];
        }
        for (int k = 0; k < VEC; ++k) v[k] = E::load(sum[k]);  // the norm sees the stored value
      }
    };
    if constexpr (VPT > 0) {
#pragma unroll
      for (int i = 0; i < VPT; ++i) {
        const int64_t c = int64_t(i) * blockDim.x + threadIdx.x;
        if (c < vecs) {
          load(c, held[i]);
          for (int k = 0; k < VEC; ++k) sumsq += held[i][k] * held[i][k];
        }
      }
    } else {
      for (int64_t c = threadIdx.x; c < vecs; c += blockDim.x) {
        load(c, held[0]);
        for (int k = 0; k < VEC; ++k) sumsq += held[0][k] * held[0][k];
      }
    }
    const float inv_rms = rsqrtf(block_sum(sumsq, scratch) / float(cols) + eps);
    T* orow = out + ol.offset(row);
    auto write = [&](int64_t c, const float* v, const float* w) {
      if constexpr (VEC > 1) {
        Vec<E> o;
        for (int k = 0; k < VEC; ++k) o.v[k] = E::store(v[k] * inv_rms * w[k]);
        o.store_to(orow + c * VEC);
      } else {
        orow[c] = E::store(v[0] * inv_rms * w[0]);
      }
    };
    if constexpr (VPT > 0) {
#pragma unroll
      for (int i = 0; i < VPT; ++i) {
        const int64_t c = int64_t(i) * blockDim.x + threadIdx.x;
        if (c < vecs) write(c, held[i], w_held[i]);
      }
    } else {
      // Second pass: the row (residual already updated) is read again, mostly from L2.
      const T* src = rr != nullptr ? rr : xr;
      for (int64_t c = threadIdx.x; c < vecs; c += blockDim.x) {
        float v[VEC], w[VEC];
        for (int k = 0; k < VEC; ++k) v[k] = E::load(src[c * VEC + k]), w[k] = E::load(weight[c * VEC + k]);
        write(c, v, w);
      }
    }
  }
}

template <class E, int VEC>
void launch_with_vec(const xhal_op_call* c, gpuStream_t stream) {
  using T = typename E::T;
  const DLTensor* x = c->t[XHAL_SLOT_X];
  const DLTensor* res = c->t[XHAL_SLOT_RESIDUAL];
  const RowLayout xl = row_layout(x), ol = row_layout(c->t[XHAL_SLOT_NORM_OUT]);
  const RowLayout rl = res ? row_layout(res) : RowLayout{};
  const int64_t vecs = xl.cols / VEC;
  // About 4 vectors per thread keeps several loads in flight; at most 1024 threads.
  int threads = int(std::min<int64_t>(1024, std::max<int64_t>(32, ((vecs + 3) / 4 + 31) / 32 * 32)));
  const int64_t per_thread = (vecs + threads - 1) / threads;
  // One wave of blocks: each loops over rows, reusing its registers' copy of the weight.
  const unsigned grid =
      grid_for(xl.rows, 1, int64_t(multiprocessor_count(c->device_index)) * (2048 / threads));
  auto go = [&](auto kernel) {
    kernel<<<grid, threads, 0, stream>>>(
        static_cast<const T*>(x->data), xl, static_cast<const T*>(c->t[XHAL_SLOT_WEIGHT]->data),
        static_cast<T*>(c->t[XHAL_SLOT_NORM_OUT]->data), ol,
        res ? static_cast<T*>(res->data) : nullptr, rl, c->params.eps);
  };
  if (per_thread <= 1) go(rms_norm_kernel<E, VEC, 1>);
  else if (per_thread <= 2) go(rms_norm_kernel<E, VEC, 2>);
  else if (per_thread <= 4) go(rms_norm_kernel<E, VEC, 4>);
  else if (per_thread <= 8) go(rms_norm_kernel<E, VEC, 8>);
  else go(rms_norm_kernel<E, VEC, 0>);
}

template <class E>
struct RmsNormKernel {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    const DLTensor* x = c->t[XHAL_SLOT_X];
    const int64_t cols = x->shape[x->ndim - 1];
    if (cols == 0 || row_layout(x).rows == 0) return XHAL_OK;
    bool vectorizable = rows_vectorizable(x, cols) &&
                        rows_vectorizable(c->t[XHAL_SLOT_NORM_OUT], cols) &&
                        rows_vectorizable(c->t[XHAL_SLOT_WEIGHT], cols);
    if (const DLTensor* res = c->t[XHAL_SLOT_RESIDUAL]) vectorizable &= rows_vectorizable(res, cols);
    auto stream = static_cast<gpuStream_t>(c->stream);
    if (vectorizable) launch_with_vec<E, Vec<E>::kVec>(c, stream);
    else launch_with_vec<E, 1>(c, stream);
    return launch_status(msg, len, "rms_norm");
  }
};

}  // namespace

void register_norm_kernels(const xhal_host_api* host) {
  register_float_kernels<RmsNormKernel>(host, XHAL_GPU_BACKEND ".rms_norm", XHAL_OP_RMS_NORM);
  register_float_kernels<RmsNormKernel>(host, XHAL_GPU_BACKEND ".fused_add_rms_norm",
                                        XHAL_OP_FUSED_ADD_RMS_NORM);
}

}  // namespace xhal::gpu

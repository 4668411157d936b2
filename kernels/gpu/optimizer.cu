// adamw_step and global_grad_norm on the GPU. adamw_step: a grid-stride loop over groups of four
// elements (16-byte accesses to the f32 state, 8-byte to 16-bit params and gradients), scalars
// when a buffer is not aligned. global_grad_norm: one wave of blocks, each summing squares over a
// grid-stride range (16-byte loads, four in flight a thread) and writing its partial sum; one block then adds the partials in a fixed
// order (deterministic on a device) and writes the norm and the clip scale.
#include <cmath>
#include <initializer_list>

#include "launch.cuh"

namespace xhal::gpu {
namespace {

struct AdamWArgs {
  void* param;
  const void* grad;
  float *m, *v, *master;
  const float *lr, *grad_scale;  // device scalars, or null
  float host_lr, beta1, beta2, eps, weight_decay;
  float inv_bc1, inv_sqrt_bc2;  // 1 / (1 - beta1^step), 1 / sqrt(1 - beta2^step)
  int64_t n;
};

// Four consecutive elements of type T, loaded and stored as one access.
template <class T>
struct alignas(4 * sizeof(T)) Four {
  T v[4];
};

template <class E, int VEC>
__global__ void adamw_kernel(AdamWArgs a) {
  using T = typename E::T;
  const float lr = a.lr ? *a.lr : a.host_lr, scale = a.grad_scale ? *a.grad_scale : 1.0f;
  const float step_size = lr * a.inv_bc1, decay = 1.0f - lr * a.weight_decay;
  const int64_t groups = a.n / VEC;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < groups; i += int64_t(gridDim.x) * blockDim.x) {
    float g[VEC], w[VEC], m[VEC], v[VEC];
    if constexpr (VEC == 4) {
      const Four<T> gv = static_cast<const Four<T>*>(a.grad)[i];
      const float4 mv = reinterpret_cast<const float4*>(a.m)[i], vv = reinterpret_cast<const float4*>(a.v)[i];
      m[0] = mv.x, m[1] = mv.y, m[2] = mv.z, m[3] = mv.w;
      v[0] = vv.x, v[1] = vv.y, v[2] = vv.z, v[3] = vv.w;
      if (a.master) {
        const float4 wv = reinterpret_cast<const float4*>(a.master)[i];
        w[0] = wv.x, w[1] = wv.y, w[2] = wv.z, w[3] = wv.w;
      } else {
        const Four<T> pv = static_cast<const Four<T>*>(a.param)[i];
        for (int k = 0; k < 4; ++k) w[k] = E::load(pv.v[k]);
      }
      for (int k = 0; k < 4; ++k) g[k] = E::load(gv.v[k]);
    } else {
      g[0] = E::load(static_cast<const T*>(a.grad)[i]);
      m[0] = a.m[i], v[0] = a.v[i];
      w[0] = a.master ? a.master[i] : E::load(static_cast<const T*>(a.param)[i]);
    }
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      const float gk = g[k] * scale;
      m[k] = a.beta1 * m[k] + (1.0f - a.beta1) * gk;
      v[k] = a.beta2 * v[k] + (1.0f - a.beta2) * gk * gk;
      w[k] = w[k] * decay - step_size * m[k] / (sqrtf(v[k]) * a.inv_sqrt_bc2 + a.eps);
    }
    if constexpr (VEC == 4) {
      reinterpret_cast<float4*>(a.m)[i] = make_float4(m[0], m[1], m[2], m[3]);
      reinterpret_cast<float4*>(a.v)[i] = make_float4(v[0], v[1], v[2], v[3]);
      if (a.master) reinterpret_cast<float4*>(a.master)[i] = make_float4(w[0], w[1], w[2], w[3]);
      Four<T> pv;
      for (int k = 0; k < 4; ++k) pv.v[k] = E::store(w[k]);
      static_cast<Four<T>*>(a.param)[i] = pv;
    } else {
      a.m[i] = m[0], a.v[i] = v[0];
      if (a.master) a.master[i] = w[0];
      static_cast<T*>(a.param)[i] = E::store(w[0]);
    }
  }
}

template <class E>
struct AdamWKernel {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    const auto& p = kernels::op_params<xhal_adamw_op_params>(c);
    AdamWArgs a{};
    a.param = c->tensors[XHAL_ADAMW_STEP_PARAM]->data;
    a.grad = c->tensors[XHAL_ADAMW_STEP_GRAD]->data;
    a.m = static_cast<float*>(c->tensors[XHAL_ADAMW_STEP_EXP_AVG]->data);
    a.v = static_cast<float*>(c->tensors[XHAL_ADAMW_STEP_EXP_AVG_SQ]->data);
    const DLTensor* master = c->tensors[XHAL_ADAMW_STEP_MASTER];
    const DLTensor* lr = c->tensors[XHAL_ADAMW_STEP_LR];
    const DLTensor* scale = c->tensors[XHAL_ADAMW_STEP_GRAD_SCALE];
    a.master = master ? static_cast<float*>(master->data) : nullptr;
    a.lr = lr ? static_cast<const float*>(lr->data) : nullptr;
    a.grad_scale = scale ? static_cast<const float*>(scale->data) : nullptr;
    a.host_lr = p.lr, a.beta1 = p.beta1, a.beta2 = p.beta2, a.eps = p.eps, a.weight_decay = p.weight_decay;
    a.inv_bc1 = float(1.0 / (1.0 - std::pow(double(p.beta1), double(p.step))));
    a.inv_sqrt_bc2 = float(1.0 / std::sqrt(1.0 - std::pow(double(p.beta2), double(p.step))));
    a.n = c->tensors[XHAL_ADAMW_STEP_PARAM]->shape[0];
    if (a.n == 0) return XHAL_OK;
    bool vec = a.n % 4 == 0;
    for (const void* ptr : std::initializer_list<const void*>{a.param, a.grad, a.m, a.v, a.master}) {
      vec = vec && reinterpret_cast<uintptr_t>(ptr) % 16 == 0;
    }
    auto stream = static_cast<gpuStream_t>(c->stream);
    const int64_t waves = int64_t(multiprocessor_count(c->device)) * 8;
    if (vec)
      adamw_kernel<E, 4><<<grid_for(a.n / 4, 256, waves), 256, 0, stream>>>(a);
    else
      adamw_kernel<E, 1><<<grid_for(a.n, 256, waves), 256, 0, stream>>>(a);
    return launch_status(msg, len, "adamw_step");
  }
};

constexpr int kNormThreads = 512;

// Sums of squares over a grid-stride range of chunks of VEC elements (16-byte loads when VEC > 1),
// four chunks a thread in flight.
template <class E, int VEC>
__global__ void __launch_bounds__(kNormThreads) sum_squares_kernel(const typename E::T* g, int64_t n, float* partial) {
  __shared__ float scratch[kNormThreads / kWarpSize];
  constexpr int kInFlight = 4;
  const int64_t chunks = n / VEC, stride = int64_t(gridDim.x) * blockDim.x;
  float sum = 0.0f;
  for (int64_t c0 = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c0 < chunks; c0 += stride * kInFlight) {
    Chunk<E, VEC> v[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      if (c0 + u * stride < chunks) v[u].load(g + (c0 + u * stride) * VEC);
    }
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      if (c0 + u * stride >= chunks) continue;
      for (int k = 0; k < VEC; ++k) sum += v[u].get(k) * v[u].get(k);
    }
  }
  sum = block_sum(sum, scratch);
  if (threadIdx.x == 0) partial[blockIdx.x] = sum;
}

__global__ void __launch_bounds__(kNormThreads)
    finish_norm_kernel(const float* partial, int64_t blocks, float* norm, float* clip, float max_norm) {
  __shared__ float scratch[kNormThreads / kWarpSize];
  float sum = 0.0f;
  for (int64_t b = threadIdx.x; b < blocks; b += blockDim.x) sum += partial[b];
  sum = block_sum(sum, scratch);
  if (threadIdx.x != 0) return;
  const float value = sqrtf(sum);
  *norm = value;
  if (clip != nullptr) *clip = kernels::clip_scale(value, max_norm);
}

template <class E>
struct GradNormKernel {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    const DLTensor* grad = c->tensors[XHAL_GLOBAL_GRAD_NORM_GRAD];
    const DLTensor* clip = c->tensors[XHAL_GLOBAL_GRAD_NORM_CLIP_SCALE];
    const int64_t n = grad->shape[0];
    constexpr int kVec = Vec<E>::kVec;
    const bool vectorizable = n % kVec == 0 && reinterpret_cast<uintptr_t>(grad->data) % 16 == 0;
    const auto kernel = vectorizable ? sum_squares_kernel<E, kVec> : sum_squares_kernel<E, 1>;
    const int64_t blocks = std::min<int64_t>(std::max<int64_t>(1, (n + kNormThreads - 1) / kNormThreads),
                                             resident_blocks(kernel, kNormThreads, 0, c->device));
    void* scratch = nullptr;
    if (const xhal_status s = c->host->scratch_alloc(c->host->ctx, c->device, size_t(blocks) * sizeof(float), c->stream,
                                                     &scratch, msg, len);
        s != XHAL_OK) {
      return s;  // the allocator's message names the request
    }
    auto stream = static_cast<gpuStream_t>(c->stream);
    auto* partial = static_cast<float*>(scratch);
    kernel<<<unsigned(blocks), kNormThreads, 0, stream>>>(static_cast<const typename E::T*>(grad->data), n, partial);
    finish_norm_kernel<<<1, kNormThreads, 0, stream>>>(
        partial, blocks, static_cast<float*>(c->tensors[XHAL_GLOBAL_GRAD_NORM_NORM]->data),
        clip ? static_cast<float*>(clip->data) : nullptr, kernels::op_params<xhal_grad_norm_op_params>(c).max_norm);
    const xhal_status status = launch_status(msg, len, "global_grad_norm");
    c->host->scratch_free(c->host->ctx, c->device, scratch);
    return status;
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<AdamWKernel>(host, XHAL_GPU_BACKEND ".adamw_step", XHAL_OP_ADAMW_STEP);
  register_float_kernels<GradNormKernel>(host, XHAL_GPU_BACKEND ".global_grad_norm", XHAL_OP_GLOBAL_GRAD_NORM);
}

}  // namespace xhal::gpu

// adamw_step and global_grad_norm on the GPU, over lists of tensors (tensor_list.cuh: a block per
// chunk of an entry, a few dozen entries a launch). adamw_step: each block's chunk in groups of
// four elements (16-byte accesses to the f32 state, 8-byte to 16-bit params and gradients), or
// scalars when an entry's buffers are not aligned. global_grad_norm: each block writes its chunk's
// sum of squares (16-byte loads, four in flight a thread); one block then adds the partial sums in
// chunk order (deterministic on a device) and writes the norm and the clip scale.
#include <initializer_list>

#include "kernels/optimizer_math.hpp"
#include "launch.cuh"
#include "tensor_list.cuh"

namespace xhal::gpu {
namespace {

constexpr int kAdamWEntries = 32;  // 64 bytes of parameters each
constexpr int kAdamWThreads = 256;
constexpr int64_t kAdamWChunk = int64_t(kAdamWThreads) * 4 * 32;  // 32 groups of four a thread

struct AdamWEntry : kernels::AdamWBuffers {
  int64_t n;
  bool vectorized;  // every buffer aligned to four of its elements
};

struct AdamWArgs {
  AdamWEntry entry[kAdamWEntries];
  ListBatch<kAdamWEntries> batch;
  const float *lr, *grad_scale;  // device scalars, or null
  xhal_adamw_op_params params;
  kernels::AdamWBiasCorrections corrections;
};
static_assert(sizeof(AdamWArgs) <= 4096, "kernel parameters are limited to 4 KB");

// Four consecutive elements of type T, loaded and stored as one access.
template <class T>
struct alignas(4 * sizeof(T)) Four {
  T v[4];
};

template <class E>
__global__ void __launch_bounds__(kAdamWThreads) adamw_kernel(const XHAL_GRID_CONSTANT AdamWArgs a) {
  using T = typename E::T;
  const auto step = kernels::AdamWUpdate::of(a.params, a.corrections, a.lr ? *a.lr : a.params.lr,
                                             a.grad_scale ? *a.grad_scale : 1.0f);
  const int place = a.batch.place_of(blockIdx.x);
  const AdamWEntry& e = a.entry[place];
  const int64_t i0 = (int64_t(blockIdx.x) - a.batch.first_chunk[place]) * kAdamWChunk;
  const int64_t i1 = min(e.n, i0 + kAdamWChunk);
  int64_t tail = i0;  // elements from here on go one by one
  if (e.vectorized) {
    const int64_t groups = (i1 - i0) / 4;
    for (int64_t g4 = threadIdx.x; g4 < groups; g4 += kAdamWThreads) {
      const int64_t i = i0 / 4 + g4;  // i0 is a multiple of 4
      const Four<T> gv = static_cast<const Four<T>*>(e.grad)[i];
      float4 mv = reinterpret_cast<const float4*>(e.m)[i], vv = reinterpret_cast<const float4*>(e.v)[i];
      float w[4];
      if (e.master) {
        const float4 wv = reinterpret_cast<const float4*>(e.master)[i];
        w[0] = wv.x, w[1] = wv.y, w[2] = wv.z, w[3] = wv.w;
      } else {
        const Four<T> pv = static_cast<const Four<T>*>(e.param)[i];
        for (int k = 0; k < 4; ++k) w[k] = E::load(pv.v[k]);
      }
      w[0] = step(E::load(gv.v[0]), w[0], mv.x, vv.x);
      w[1] = step(E::load(gv.v[1]), w[1], mv.y, vv.y);
      w[2] = step(E::load(gv.v[2]), w[2], mv.z, vv.z);
      w[3] = step(E::load(gv.v[3]), w[3], mv.w, vv.w);
      reinterpret_cast<float4*>(e.m)[i] = mv;
      reinterpret_cast<float4*>(e.v)[i] = vv;
      if (e.master) reinterpret_cast<float4*>(e.master)[i] = make_float4(w[0], w[1], w[2], w[3]);
      Four<T> pv;
      for (int k = 0; k < 4; ++k) pv.v[k] = E::store(w[k]);
      static_cast<Four<T>*>(e.param)[i] = pv;
    }
    tail = i0 + groups * 4;
  }
  for (int64_t i = tail + threadIdx.x; i < i1; i += kAdamWThreads) {
    float m = e.m[i], v = e.v[i];
    const float w = step(E::load(static_cast<const T*>(e.grad)[i]),
                         e.master ? e.master[i] : E::load(static_cast<const T*>(e.param)[i]), m, v);
    e.m[i] = m, e.v[i] = v;
    if (e.master) e.master[i] = w;
    static_cast<T*>(e.param)[i] = E::store(w);
  }
}

template <class E>
struct AdamWKernel {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    const kernels::ListCall list = kernels::adamw_list(c);
    AdamWArgs a{};
    const DLTensor* lr = c->tensors[XHAL_ADAMW_STEP_LR];
    const DLTensor* scale = c->tensors[XHAL_ADAMW_STEP_GRAD_SCALE];
    a.lr = lr ? static_cast<const float*>(lr->data) : nullptr;
    a.grad_scale = scale ? static_cast<const float*>(scale->data) : nullptr;
    a.params = kernels::op_params<xhal_adamw_op_params>(c);
    a.corrections = kernels::AdamWBiasCorrections::of(a.params);
    auto stream = static_cast<gpuStream_t>(c->stream);
    return for_each_list_batch<kAdamWEntries>(
        list.entries(), kAdamWChunk, [&](int64_t i) { return list.length(XHAL_ADAMW_STEP_PARAM, i); },
        [&](const ListBatch<kAdamWEntries>& batch) {
          a.batch = batch;
          for (int j = 0; j < batch.count; ++j) {
            const int64_t i = batch.entry[j];
            AdamWEntry& e = a.entry[j];
            static_cast<kernels::AdamWBuffers&>(e) = kernels::AdamWBuffers::of(list, i);
            e.n = list.length(XHAL_ADAMW_STEP_PARAM, i);
            // Four elements are 16 bytes of f32 state and 4 * sizeof(T) of param and grad.
            e.vectorized = reinterpret_cast<uintptr_t>(e.param) % (4 * sizeof(typename E::T)) == 0 &&
                           reinterpret_cast<uintptr_t>(e.grad) % (4 * sizeof(typename E::T)) == 0;
            for (const void* ptr : std::initializer_list<const void*>{e.m, e.v, e.master}) {
              e.vectorized = e.vectorized && reinterpret_cast<uintptr_t>(ptr) % 16 == 0;
            }
          }
          adamw_kernel<E><<<unsigned(batch.chunks()), kAdamWThreads, 0, stream>>>(a);
          return launch_status(msg, len, "adamw_step");
        });
  }
};

constexpr int kNormEntries = 96;  // 33 bytes of parameters each
constexpr int kNormThreads = 512;
constexpr int64_t kNormChunk = int64_t(1) << 16;

struct NormArgs {
  const void* grad[kNormEntries];
  int64_t n[kNormEntries];
  bool vectorized[kNormEntries];
  ListBatch<kNormEntries> batch;
  float* partial;  // one sum per chunk of the whole list; this batch's from partial[0]
};
static_assert(sizeof(NormArgs) <= 4096, "kernel parameters are limited to 4 KB");

// The sum of squares of g[i0, i1), VEC elements a load (16 bytes when VEC > 1), kInFlight loads a
// thread in flight, then the rest one by one; the block's sum in thread 0.
template <class E, int VEC>
__device__ float block_sum_squares(const typename E::T* g, int64_t i0, int64_t i1, float* scratch) {
  constexpr int kInFlight = 4;
  const int64_t vecs = (i1 - i0) / VEC;
  float sum = 0.0f;
  for (int64_t c0 = threadIdx.x; c0 < vecs; c0 += int64_t(kNormThreads) * kInFlight) {
    Chunk<E, VEC> v[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      if (c0 + u * kNormThreads < vecs) v[u].load(g + i0 + (c0 + u * kNormThreads) * VEC);
    }
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      if (c0 + u * kNormThreads >= vecs) continue;
      for (int k = 0; k < VEC; ++k) sum += v[u].get(k) * v[u].get(k);
    }
  }
  for (int64_t i = i0 + vecs * VEC + threadIdx.x; i < i1; i += kNormThreads) sum += E::load(g[i]) * E::load(g[i]);
  return block_sum(sum, scratch);
}

template <class E>
__global__ void __launch_bounds__(kNormThreads) sum_squares_kernel(const XHAL_GRID_CONSTANT NormArgs a) {
  __shared__ float scratch[kNormThreads / kWarpSize];
  const int place = a.batch.place_of(blockIdx.x);
  const auto* g = static_cast<const typename E::T*>(a.grad[place]);
  const int64_t i0 = (int64_t(blockIdx.x) - a.batch.first_chunk[place]) * kNormChunk;
  const int64_t i1 = min(a.n[place], i0 + kNormChunk);
  const float sum = a.vectorized[place] ? block_sum_squares<E, Vec<E>::kVec>(g, i0, i1, scratch)
                                        : block_sum_squares<E, 1>(g, i0, i1, scratch);
  if (threadIdx.x == 0) a.partial[blockIdx.x] = sum;
}

__global__ void __launch_bounds__(kNormThreads)
    finish_norm_kernel(const float* partial, int64_t chunks, float* norm, float* clip, float max_norm) {
  __shared__ float scratch[kNormThreads / kWarpSize];
  float sum = 0.0f;
  for (int64_t b = threadIdx.x; b < chunks; b += blockDim.x) sum += partial[b];
  sum = block_sum(sum, scratch);
  if (threadIdx.x != 0) return;
  const float value = sqrtf(sum);
  *norm = value;
  if (clip != nullptr) *clip = kernels::clip_scale(value, max_norm);
}

template <class E>
struct GradNormKernel {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    const kernels::ListCall list = kernels::grad_norm_list(c);
    auto length = [&](int64_t i) { return list.length(XHAL_GLOBAL_GRAD_NORM_GRAD, i); };
    int64_t chunks = 0;
    for (int64_t i = 0; i < list.entries(); ++i) chunks += (length(i) + kNormChunk - 1) / kNormChunk;
    void* scratch = nullptr;
    if (const xhal_status s =
            c->host->scratch_alloc(c->host->ctx, c->device, size_t(std::max<int64_t>(chunks, 1)) * sizeof(float),
                                   c->stream, &scratch, msg, len);
        s != XHAL_OK) {
      return s;  // the allocator's message names the request
    }
    auto stream = static_cast<gpuStream_t>(c->stream);
    auto* partial = static_cast<float*>(scratch);
    NormArgs a{};
    a.partial = partial;
    xhal_status status = for_each_list_batch<kNormEntries>(
        list.entries(), kNormChunk, length, [&](const ListBatch<kNormEntries>& batch) {
          a.batch = batch;
          for (int j = 0; j < batch.count; ++j) {
            const DLTensor* g = list.tensor(XHAL_GLOBAL_GRAD_NORM_GRAD, batch.entry[j]);
            a.grad[j] = g->data;
            a.n[j] = g->shape[0];
            a.vectorized[j] = reinterpret_cast<uintptr_t>(g->data) % 16 == 0;
          }
          sum_squares_kernel<E><<<unsigned(batch.chunks()), kNormThreads, 0, stream>>>(a);
          a.partial += batch.chunks();
          return launch_status(msg, len, "global_grad_norm");
        });
    if (status == XHAL_OK) {
      const DLTensor* clip = c->tensors[XHAL_GLOBAL_GRAD_NORM_CLIP_SCALE];
      finish_norm_kernel<<<1, kNormThreads, 0, stream>>>(
          partial, chunks, static_cast<float*>(c->tensors[XHAL_GLOBAL_GRAD_NORM_NORM]->data),
          clip ? static_cast<float*>(clip->data) : nullptr, kernels::op_params<xhal_grad_norm_op_params>(c).max_norm);
      status = launch_status(msg, len, "global_grad_norm");
    }
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

// cross_entropy and cross_entropy_backward on the GPU: a block per token row, streaming the row in
// its dtype with 16-byte loads (scalars when rows are not aligned), four per thread in flight.
// The forward keeps a running (max, sum of exponentials) per thread, rescaled once per four
// vectors, then merges the threads' pairs; the backward reads the forward's lse and writes each
// gradient where its logit was read (so dlogits may be logits). A label outside 0..V-1 that is not
// ignore_index gives a NaN loss and a NaN gradient row (the CPU backend refuses it; see
// docs/ops.md): the check would need a round trip to the host.
#include <cmath>

#include "launch.cuh"

namespace xhal::gpu {
namespace {

constexpr int kUnroll = 4;  // vectors a thread has in flight
constexpr int kMaxThreads = 512;

struct CrossEntropyArgs {
  const void* logits;
  int64_t ld;  // row stride of logits, elements
  int64_t T, V;
  const void* labels;
  int64_t label_stride;
  bool labels64;
  float* loss;  // forward (written) or dloss (read by the backward)
  int64_t loss_stride;
  float* lse;  // written by the forward, read by the backward
  int64_t lse_stride;
  void* dlogits;  // backward only
  int64_t ldd;
  int64_t ignore;
  float smoothing, z;

  __device__ int64_t label(int64_t row) const {
    return labels64 ? static_cast<const int64_t*>(labels)[row * label_stride]
                    : static_cast<const int32_t*>(labels)[row * label_stride];
  }
};

// Adds a (max, sum of exp(x - max)) pair into another. A max of -inf (nothing yet, or masked
// classes) contributes nothing; a NaN in a sum stays.
__device__ inline void merge_lse(float& m, float& s, float m2, float s2) {
  const float n = fmaxf(m, m2), ref = n == -INFINITY ? 0.0f : n;
  s = s * __expf(m - ref) + s2 * __expf(m2 - ref);
  m = n;
}

// The row's chunks c0, c0 + blockDim.x, ... (kUnroll of them, those below `chunks`), every load
// issued before any is used.
template <class E, int VEC>
__device__ inline void load_chunks(Chunk<E, VEC> (&v)[kUnroll], const typename E::T* x, int64_t c0, int64_t chunks) {
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int64_t c = c0 + int64_t(u) * blockDim.x;
    if (c < chunks) v[u].load(x + c * VEC);
  }
}

template <class E, int VEC>
__global__ void __launch_bounds__(kMaxThreads) cross_entropy_kernel(CrossEntropyArgs a) {
  using T = typename E::T;
  __shared__ float shared_m[kMaxThreads / kWarpSize], shared_s[kMaxThreads / kWarpSize],
      shared_sum[kMaxThreads / kWarpSize];
  const int64_t chunks = a.V / VEC;
  for (int64_t row = blockIdx.x; row < a.T; row += gridDim.x) {
    const T* x = static_cast<const T*>(a.logits) + row * a.ld;
    float m = -INFINITY, s = 0.0f, sum = 0.0f;
    for (int64_t c0 = threadIdx.x; c0 < chunks; c0 += int64_t(blockDim.x) * kUnroll) {
      Chunk<E, VEC> v[kUnroll];
      load_chunks(v, x, c0, chunks);
      float top = -INFINITY;
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        if (c0 + int64_t(u) * blockDim.x >= chunks) continue;
        for (int k = 0; k < VEC; ++k) top = fmaxf(top, v[u].get(k));
      }
      const float n = fmaxf(m, top), ref = n == -INFINITY ? 0.0f : n;
      s *= __expf(m - ref);
      m = n;
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        if (c0 + int64_t(u) * blockDim.x >= chunks) continue;
        for (int k = 0; k < VEC; ++k) {
          const float xv = v[u].get(k);
          s += __expf(xv - ref);
          sum += xv;
        }
      }
    }
    // Merge over the warp, then over the warps.
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
      merge_lse(m, s, warp_shfl_xor(m, offset), warp_shfl_xor(s, offset));
      sum += warp_shfl_xor(sum, offset);
    }
    const int warp = threadIdx.x / kWarpSize, warps = (blockDim.x + kWarpSize - 1) / kWarpSize;
    if (threadIdx.x % kWarpSize == 0) shared_m[warp] = m, shared_s[warp] = s, shared_sum[warp] = sum;
    __syncthreads();
    if (threadIdx.x == 0) {
      m = shared_m[0], s = shared_s[0], sum = shared_sum[0];
      for (int w = 1; w < warps; ++w) {
        merge_lse(m, s, shared_m[w], shared_s[w]);
        sum += shared_sum[w];
      }
      const float lse = m + logf(s);  // -inf for a fully masked row, NaN when a logit is NaN
      a.lse[row * a.lse_stride] = lse;
      const int64_t y = a.label(row);
      float loss = 0.0f;
      if (y != a.ignore) {
        loss = y >= 0 && y < a.V ? lse - E::load(x[y]) : NAN;
        if (a.smoothing > 0) loss = (1.0f - a.smoothing) * loss + a.smoothing * (lse - sum / float(a.V));
        if (a.z > 0) loss += a.z * lse * lse;
      }
      a.loss[row * a.loss_stride] = loss;
    }
    __syncthreads();  // the shared pairs are rewritten for the next row
  }
}

template <class E, int VEC>
__global__ void __launch_bounds__(kMaxThreads) cross_entropy_backward_kernel(CrossEntropyArgs a) {
  using T = typename E::T;
  const int64_t chunks = a.V / VEC;
  for (int64_t row = blockIdx.x; row < a.T; row += gridDim.x) {
    const T* x = static_cast<const T*>(a.logits) + row * a.ld;
    T* d = static_cast<T*>(a.dlogits) + row * a.ldd;
    const int64_t y = a.label(row);
    const bool ignored = y == a.ignore, bad = !ignored && (y < 0 || y >= a.V);
    const float l = a.lse[row * a.lse_stride], g = a.loss[row * a.loss_stride];
    const float scale = ignored ? 0.0f : bad ? NAN : g * (1.0f + 2.0f * a.z * l);
    const float floor = ignored ? 0.0f : g * a.smoothing / float(a.V), hit = g * (1.0f - a.smoothing);
    for (int64_t c0 = threadIdx.x; c0 < chunks; c0 += int64_t(blockDim.x) * kUnroll) {
      Chunk<E, VEC> v[kUnroll];
      load_chunks(v, x, c0, chunks);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int64_t c = c0 + int64_t(u) * blockDim.x;
        if (c >= chunks) continue;
        Chunk<E, VEC> o;
        for (int k = 0; k < VEC; ++k) {
          // An ignored row is all zeros whatever its logits hold (0 * exp(NaN) would be NaN).
          const float p = ignored ? 0.0f : scale * __expf(v[u].get(k) - l) - floor;
          o.v.v[k] = E::store(c * VEC + k == y && !ignored ? p - hit : p);
        }
        o.store(d + c * VEC);
      }
    }
  }
}

template <class E, bool kBackward>
struct CrossEntropyKernel {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    const DLTensor* logits = c->tensors[XHAL_CROSS_ENTROPY_LOGITS];
    const DLTensor* labels = c->tensors[XHAL_CROSS_ENTROPY_LABELS];
    const DLTensor* per_token = c->tensors[XHAL_CROSS_ENTROPY_LOSS];  // loss, or the backward's dloss
    const DLTensor* lse = c->tensors[XHAL_CROSS_ENTROPY_LSE];
    const DLTensor* dlogits = kBackward ? c->tensors[XHAL_CROSS_ENTROPY_BACKWARD_DLOGITS] : nullptr;
    const auto& p = kernels::op_params<xhal_cross_entropy_op_params>(c);
    const int64_t T = logits->shape[0], V = logits->shape[1];
    if (T == 0) return XHAL_OK;
    CrossEntropyArgs a{};
    a.logits = logits->data, a.ld = logits->strides[0], a.T = T, a.V = V;
    a.labels = labels->data, a.label_stride = labels->strides[0], a.labels64 = labels->dtype.bits == 64;
    a.loss = static_cast<float*>(per_token->data), a.loss_stride = per_token->strides[0];
    a.lse = static_cast<float*>(lse->data), a.lse_stride = lse->strides[0];
    a.dlogits = dlogits ? dlogits->data : nullptr, a.ldd = dlogits ? dlogits->strides[0] : 0;
    a.ignore = p.ignore_index, a.smoothing = p.label_smoothing, a.z = p.z_loss;
    bool vectorizable = rows_vectorizable(logits, V);
    if (dlogits != nullptr) vectorizable = vectorizable && rows_vectorizable(dlogits, V);
    const int64_t vec = vectorizable ? Vec<E>::kVec : 1;
    const int threads = block_threads((V / vec + kUnroll - 1) / kUnroll, kMaxThreads);
    auto stream = static_cast<gpuStream_t>(c->stream);
    const unsigned grid = grid_for(T, 1, int64_t(1) << 30);  // blocks loop over rows past it
    if constexpr (kBackward) {
      if (vectorizable)
        cross_entropy_backward_kernel<E, Vec<E>::kVec><<<grid, threads, 0, stream>>>(a);
      else
        cross_entropy_backward_kernel<E, 1><<<grid, threads, 0, stream>>>(a);
    } else {
      if (vectorizable)
        cross_entropy_kernel<E, Vec<E>::kVec><<<grid, threads, 0, stream>>>(a);
      else
        cross_entropy_kernel<E, 1><<<grid, threads, 0, stream>>>(a);
    }
    return launch_status(msg, len, kBackward ? "cross_entropy_backward" : "cross_entropy");
  }
};

template <class E>
using CrossEntropy = CrossEntropyKernel<E, false>;
template <class E>
using CrossEntropyBackward = CrossEntropyKernel<E, true>;

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<CrossEntropy>(host, XHAL_GPU_BACKEND ".cross_entropy", XHAL_OP_CROSS_ENTROPY);
  register_float_kernels<CrossEntropyBackward>(host, XHAL_GPU_BACKEND ".cross_entropy_backward",
                                               XHAL_OP_CROSS_ENTROPY_BACKWARD);
}

}  // namespace xhal::gpu

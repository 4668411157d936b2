// linear on any GPU, without a vendor BLAS: out[M,N] = x[M,K] w[N,K]^T + bias, a tiled SIMT GEMM
// with f32 accumulation. Each block computes a 128 x 128 tile of out, stepping over K in slices of
// 16 staged in shared memory as f32 and transposed (k-major), so that a thread's operands for one
// k are consecutive floats. Each of the 256 threads keeps an 8 x 8 block of sums in registers, at
// rows m = ty + 16 i and columns n = tx + 16 j: neighbouring threads read neighbouring floats.
// A vendor library (cuBLASLt on cuda) is registered above it where one exists; on hip it is the
// linear kernel (Debian has no hipBLAS).
#include "launch.cuh"

namespace xhal::gpu {
namespace {

constexpr int kTile = 128, kSlice = 16, kLinearThreads = 256, kPerThread = 8;
constexpr int kSide = kTile / kPerThread;  // 16 threads along each side of the tile
static_assert(kSide * kSide == kLinearThreads, "one thread per 8 x 8 block of the tile");

// Stages rows [r0, r0 + kTile) x columns [k0, k0 + kSlice) of a K-contiguous operand as f32,
// transposed into s[k][row]; zeros outside the operand. Each thread loads 8 consecutive k of a row.
template <class E>
__device__ inline void stage_slice(float (*s)[kTile], const typename E::T* src, int64_t ld, int64_t rows, int64_t K,
                                   int64_t r0, int64_t k0) {
  const int r = threadIdx.x / 2, kc = (threadIdx.x % 2) * (kSlice / 2);
  const bool row_ok = r0 + r < rows;
  const typename E::T* p = src + (r0 + r) * ld + k0 + kc;
#pragma unroll
  for (int e = 0; e < kSlice / 2; ++e) {
    s[kc + e][r] = row_ok && k0 + kc + e < K ? E::load(p[e]) : 0.0f;
  }
}

template <class E>
__global__ void __launch_bounds__(kLinearThreads)
    linear_tiled_kernel(const typename E::T* x, int64_t ldx, const typename E::T* w, int64_t ldw,
                        const typename E::T* bias, int64_t bias_stride, typename E::T* out, int64_t ldo, int64_t M,
                        int64_t N, int64_t K) {
  __shared__ float xs[kSlice][kTile];
  __shared__ float ws[kSlice][kTile];
  const int tx = threadIdx.x % kSide, ty = threadIdx.x / kSide;
  const int64_t m0 = int64_t(blockIdx.y) * kTile, n0 = int64_t(blockIdx.x) * kTile;
  float acc[kPerThread][kPerThread];
#pragma unroll
  for (int i = 0; i < kPerThread; ++i)
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) acc[i][j] = 0.0f;

  for (int64_t k0 = 0; k0 < K; k0 += kSlice) {
    stage_slice<E>(xs, x, ldx, M, K, m0, k0);
    stage_slice<E>(ws, w, ldw, N, K, n0, k0);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kSlice; ++kk) {
      float a[kPerThread], b[kPerThread];
#pragma unroll
      for (int i = 0; i < kPerThread; ++i) a[i] = xs[kk][ty + kSide * i], b[i] = ws[kk][tx + kSide * i];
#pragma unroll
      for (int i = 0; i < kPerThread; ++i)
#pragma unroll
        for (int j = 0; j < kPerThread; ++j) acc[i][j] += a[i] * b[j];
    }
    __syncthreads();  // the slice is overwritten next
  }

#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    const int64_t n = n0 + tx + kSide * j;
    if (n >= N) continue;
    const float add = bias != nullptr ? E::load(bias[n * bias_stride]) : 0.0f;
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int64_t m = m0 + ty + kSide * i;
      if (m < M) out[m * ldo + n] = E::store(acc[i][j] + add);
    }
  }
}

template <class E>
struct LinearTiled {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    using T = typename E::T;
    const DLTensor *x = c->tensors[XHAL_LINEAR_X], *w = c->tensors[XHAL_LINEAR_W];
    const DLTensor *bias = c->tensors[XHAL_LINEAR_BIAS], *out = c->tensors[XHAL_LINEAR_OUT];
    const int64_t M = x->shape[0], K = x->shape[1], N = w->shape[0];
    if (M == 0 || N == 0) return XHAL_OK;
    const int64_t tiles_n = (N + kTile - 1) / kTile, tiles_m = (M + kTile - 1) / kTile;
    if (tiles_m > 65535) {
      return kernels::kernel_error(msg, len, XHAL_ERR_UNSUPPORTED, "tiled linear: more than %d rows of x",
                                   65535 * kTile);
    }
    linear_tiled_kernel<E>
        <<<dim3(unsigned(tiles_n), unsigned(tiles_m)), kLinearThreads, 0, static_cast<gpuStream_t>(c->stream)>>>(
            static_cast<const T*>(x->data), x->strides[0], static_cast<const T*>(w->data), w->strides[0],
            bias != nullptr ? static_cast<const T*>(bias->data) : nullptr, bias != nullptr ? bias->strides[0] : 0,
            static_cast<T*>(out->data), out->strides[0], M, N, K);
    return launch_status(msg, len, "tiled linear");
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<LinearTiled>(host, XHAL_GPU_BACKEND ".linear_tiled", XHAL_OP_LINEAR, {0, true, nullptr});
}

}  // namespace xhal::gpu

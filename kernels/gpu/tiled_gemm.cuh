// A tiled SIMT GEMM for any GPU, without a vendor BLAS: out[M,N] = A[M,K] B[N,K]^T (+ bias[N]),
// f32 accumulation, each operand given by a row stride and a k stride so that one kernel serves
// linear (both operands K-contiguous) and its gradients (dout · w reads w along its rows' columns,
// doutᵀ · x reads dout by column). Operands convert their elements as they are staged, to f32 (a
// float dtype, fp8 codes) or int32 (int8 codes, summed exactly), their `Value`, and an epilogue
// writes each sum (the bias, the quantized linears' scales). Each block computes a 128 x 128 tile of out, stepping over K in
// slices of 16 staged in shared memory as f32 and transposed (k-major), so that a thread's
// operands for one k are consecutive floats. Each of the 256 threads keeps an 8 x 8 block of sums
// in registers, at rows m = ty + 16 i and columns n = tx + 16 j: neighbouring threads read
// neighbouring floats. A contraction of length 0 writes the bias (or zeros).
#pragma once

#include "launch.cuh"

namespace xhal::gpu {

namespace tiled_gemm {

constexpr int kTile = 128, kSlice = 16, kThreads = 256, kPerThread = 8;
constexpr int kSide = kTile / kPerThread;  // 16 threads along each side of the tile
static_assert(kSide * kSide == kThreads, "one thread per 8 x 8 block of the tile");

// An operand of a float dtype: element (row, k) at data[row * row_stride + k * k_stride].
template <class E>
struct Operand {
  using Value = float;
  const typename E::T* data;
  int64_t row_stride, k_stride;
  __device__ float load(int64_t i) const { return E::load(data[i]); }
};

// out[m, n] = sum + bias[n] in out's dtype E.
template <class E>
struct BiasEpilogue {
  const typename E::T* bias;
  int64_t bias_stride;
  typename E::T* out;
  int64_t ldo;
  __device__ float bias_at(int64_t n) const { return bias != nullptr ? E::load(bias[n * bias_stride]) : 0.0f; }
  __device__ void operator()(int64_t m, int64_t n, float sum) const { out[m * ldo + n] = E::store(sum + bias_at(n)); }
};

// Stages rows [r0, r0 + kTile) x k [k0, k0 + kSlice) of an operand as f32, transposed into
// s[k][row]; zeros outside it. Threads read along whichever of the two dimensions is contiguous:
// 8 consecutive k of a row when k is, else 8 consecutive rows at one k.
template <class A>
__device__ inline void stage_slice(typename A::Value (*s)[kTile], const A& a, int64_t rows, int64_t K, int64_t r0,
                                   int64_t k0) {
  using V = typename A::Value;
  if (a.k_stride == 1 || a.row_stride != 1) {
    const int r = threadIdx.x / 2, kc = (threadIdx.x % 2) * (kSlice / 2);
    const bool row_ok = r0 + r < rows;
#pragma unroll
    for (int e = 0; e < kSlice / 2; ++e) {
      const int64_t k = k0 + kc + e;
      s[kc + e][r] = row_ok && k < K ? a.load((r0 + r) * a.row_stride + k * a.k_stride) : V(0);
    }
  } else {
    const int kk = threadIdx.x / (kTile / 8), rc = (threadIdx.x % (kTile / 8)) * 8;
    const bool k_ok = k0 + kk < K;
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const int64_t r = r0 + rc + e;
      s[kk][rc + e] = k_ok && r < rows ? a.load(r + (k0 + kk) * a.k_stride) : V(0);
    }
  }
}

template <class A, class B, class Epilogue>
__global__ void __launch_bounds__(kThreads) kernel(A a, B b, Epilogue epilogue, int64_t M, int64_t N, int64_t K) {
  using V = typename A::Value;
  static_assert(sizeof(V) == sizeof(typename B::Value), "both operands stage the same value type");
  __shared__ V as[kSlice][kTile];
  __shared__ V bs[kSlice][kTile];
  const int tx = threadIdx.x % kSide, ty = threadIdx.x / kSide;
  const int64_t m0 = int64_t(blockIdx.y) * kTile, n0 = int64_t(blockIdx.x) * kTile;
  V acc[kPerThread][kPerThread];
#pragma unroll
  for (int i = 0; i < kPerThread; ++i)
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) acc[i][j] = V(0);

  for (int64_t k0 = 0; k0 < K; k0 += kSlice) {
    stage_slice(as, a, M, K, m0, k0);
    stage_slice(bs, b, N, K, n0, k0);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kSlice; ++kk) {
      V x[kPerThread], y[kPerThread];
#pragma unroll
      for (int i = 0; i < kPerThread; ++i) x[i] = as[kk][ty + kSide * i], y[i] = bs[kk][tx + kSide * i];
#pragma unroll
      for (int i = 0; i < kPerThread; ++i)
#pragma unroll
        for (int j = 0; j < kPerThread; ++j) acc[i][j] += x[i] * y[j];
    }
    __syncthreads();  // the slice is overwritten next
  }

#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    const int64_t n = n0 + tx + kSide * j;
    if (n >= N) continue;
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int64_t m = m0 + ty + kSide * i;
      if (m < M) epilogue(m, n, acc[i][j]);
    }
  }
}

}  // namespace tiled_gemm

// Launches epilogue(m, n, sum of a[m, k] b[n, k]) for every m < M, n < N on `stream`; `what`
// names the kernel in errors.
template <class A, class B, class Epilogue>
xhal_status launch_tiled_gemm(const A& a, const B& b, const Epilogue& epilogue, int64_t M, int64_t N, int64_t K,
                              void* stream, const char* what, char* msg, size_t len) {
  using tiled_gemm::kTile;
  if (M == 0 || N == 0) return XHAL_OK;
  const int64_t tiles_n = (N + kTile - 1) / kTile, tiles_m = (M + kTile - 1) / kTile;
  if (tiles_m > 65535) {
    return kernel_error(msg, len, XHAL_ERR_UNSUPPORTED, "%s: more than %d rows of output", what, 65535 * kTile);
  }
  tiled_gemm::
      kernel<<<dim3(unsigned(tiles_n), unsigned(tiles_m)), tiled_gemm::kThreads, 0, static_cast<gpuStream_t>(stream)>>>(
          a, b, epilogue, M, N, K);
  return launch_status(msg, len, what);
}

// out[M,N] = a · bᵀ (+ bias), all of dtype E.
template <class E>
xhal_status launch_tiled_gemm(tiled_gemm::Operand<E> a, tiled_gemm::Operand<E> b, const typename E::T* bias,
                              int64_t bias_stride, typename E::T* out, int64_t ldo, int64_t M, int64_t N, int64_t K,
                              void* stream, const char* what, char* msg, size_t len) {
  return launch_tiled_gemm(a, b, tiled_gemm::BiasEpilogue<E>{bias, bias_stride, out, ldo}, M, N, K, stream, what, msg,
                           len);
}

}  // namespace xhal::gpu

// linear_fp8 and linear_int8 on any GPU, without a vendor BLAS: the tiled SIMT GEMM of
// tiled_gemm.cuh with the codes converted as they are staged (fp8 to f32; int8 to int32, summed
// exactly) and the scales and bias applied by its epilogue (kernels/quantize.hpp's arithmetic for
// int8, so every backend gives the same bits). Every format pair and layout; cuBLASLt's kernels
// are registered above these on cuda. Also linear_int8_epilogue (linear_int8_epilogue.hpp), the
// same epilogue as a pass over int32 sums a vendor GEMM wrote.
#include <type_traits>

#include "kernels/quantize.hpp"
#include "linear_int8_epilogue.hpp"
#include "tiled_gemm.cuh"

namespace xhal::gpu {
namespace {

// fp8 codes, element (row, k) at data[row * row_stride + k], as f32.
struct Fp8Codes {
  using Value = float;
  const uint8_t* data;
  int64_t row_stride, k_stride;
  kernels::QuantFormat format;
  __device__ float load(int64_t i) const { return kernels::code_value(data[i], format); }
};

// int8 codes as int32.
struct Int8Codes {
  using Value = int32_t;
  const uint8_t* data;
  int64_t row_stride, k_stride;
  __device__ int32_t load(int64_t i) const { return int32_t(int8_t(data[i])); }
};

// out[m, n] from a sum and the scales (per tensor: stride 0, or per row) and bias: fp8's f32 sum *
// (x_scale * w_scale) + bias, int8's kernels::int8_linear_value.
template <class E>
struct ScaledEpilogue {
  const float *x_scale, *w_scale;
  int64_t x_scale_stride, w_scale_stride;
  tiled_gemm::BiasEpilogue<E> out;
  __device__ void operator()(int64_t m, int64_t n, float sum) const {
    out(m, n, sum * (x_scale[m * x_scale_stride] * w_scale[n * w_scale_stride]));
  }
  __device__ void operator()(int64_t m, int64_t n, int32_t sum) const {
    out.out[m * out.ldo + n] = E::store(
        kernels::int8_linear_value(sum, x_scale[m * x_scale_stride], w_scale[n * w_scale_stride], out.bias_at(n)));
  }
};

template <class E>
ScaledEpilogue<E> scaled_epilogue(const xhal_op_call* c) {
  using T = typename E::T;
  const DLTensor *xs = c->tensors[XHAL_LINEAR_FP8_X_SCALE], *ws = c->tensors[XHAL_LINEAR_FP8_W_SCALE];
  const DLTensor *bias = c->tensors[XHAL_LINEAR_FP8_BIAS], *out = c->tensors[XHAL_LINEAR_FP8_OUT];
  return {static_cast<const float*>(xs->data),
          static_cast<const float*>(ws->data),
          xs->ndim == 2 ? 1 : 0,
          ws->ndim == 2 ? 1 : 0,
          {bias != nullptr ? static_cast<const T*>(bias->data) : nullptr, bias != nullptr ? bias->strides[0] : 0,
           static_cast<T*>(out->data), out->strides[0]}};
}

template <class Codes>
Codes codes_of(const DLTensor* t) {
  const auto* data = static_cast<const uint8_t*>(t->data);
  if constexpr (std::is_same_v<Codes, Fp8Codes>) {
    return {data, t->strides[0], 1, kernels::quant_format(t)};
  } else {
    return {data, t->strides[0], 1};
  }
}

template <class Codes>
struct QuantizedTiled {
  template <class E>
  struct Kernel {
    static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
      const DLTensor *x = c->tensors[XHAL_LINEAR_FP8_X], *w = c->tensors[XHAL_LINEAR_FP8_W];
      return launch_tiled_gemm(codes_of<Codes>(x), codes_of<Codes>(w), scaled_epilogue<E>(c), x->shape[0], w->shape[0],
                               x->shape[1], c->stream, "tiled quantized linear", msg, len);
    }
  };
};

// A thread for 4 consecutive columns of a row of the sums (N a multiple of 4 when vectorized).
template <class E, bool kVec4>
__global__ void epilogue_kernel(const int32_t* sums, int64_t M, int64_t N, ScaledEpilogue<E> epilogue) {
  const int64_t per_row = (N + 3) / 4;
  for (int64_t task = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; task < M * per_row;
       task += int64_t(gridDim.x) * blockDim.x) {
    const int64_t m = task / per_row, n0 = task % per_row * 4;
    if constexpr (kVec4) {
      const int4 v = *reinterpret_cast<const int4*>(sums + m * N + n0);
      epilogue(m, n0, v.x), epilogue(m, n0 + 1, v.y), epilogue(m, n0 + 2, v.z), epilogue(m, n0 + 3, v.w);
    } else {
      for (int64_t n = n0; n < n0 + 4 && n < N; ++n) epilogue(m, n, sums[m * N + n]);
    }
  }
}

template <class E>
xhal_status run_epilogue(const xhal_op_call* c, const int32_t* sums, char* msg, size_t len) {
  const int64_t M = c->tensors[XHAL_LINEAR_INT8_X]->shape[0], N = c->tensors[XHAL_LINEAR_INT8_W]->shape[0];
  if (M == 0 || N == 0) return XHAL_OK;
  constexpr int kThreads = 256;
  const unsigned grid = grid_for(M * ((N + 3) / 4), kThreads, 4096);
  const gpuStream_t stream = static_cast<gpuStream_t>(c->stream);
  if (N % 4 == 0 && reinterpret_cast<uintptr_t>(sums) % 16 == 0) {
    epilogue_kernel<E, true><<<grid, kThreads, 0, stream>>>(sums, M, N, scaled_epilogue<E>(c));
  } else {
    epilogue_kernel<E, false><<<grid, kThreads, 0, stream>>>(sums, M, N, scaled_epilogue<E>(c));
  }
  return launch_status(msg, len, "linear_int8 epilogue");
}

}  // namespace

xhal_status linear_int8_epilogue(const xhal_op_call* c, const int32_t* sums, char* msg, size_t len) {
  if (gpuSetDevice(c->device) != gpuSuccess) {
    return kernel_error(msg, len, XHAL_ERR_DEVICE, "cannot make device %d current", c->device);
  }
  switch (c->dtype) {
    case XHAL_DTYPE_F32: return run_epilogue<F32>(c, sums, msg, len);
    case XHAL_DTYPE_F16: return run_epilogue<F16>(c, sums, msg, len);
    case XHAL_DTYPE_BF16: return run_epilogue<BF16>(c, sums, msg, len);
    default: return kernel_error(msg, len, XHAL_ERR_UNSUPPORTED, "linear_int8 epilogue: out must be f32, f16 or bf16");
  }
}

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<QuantizedTiled<Fp8Codes>::Kernel>(host, XHAL_GPU_BACKEND ".linear_fp8_tiled",
                                                           XHAL_OP_LINEAR_FP8, {0, true, nullptr});
  register_float_kernels<QuantizedTiled<Int8Codes>::Kernel>(host, XHAL_GPU_BACKEND ".linear_int8_tiled",
                                                            XHAL_OP_LINEAR_INT8, {0, true, nullptr});
}

}  // namespace xhal::gpu

// quantize and dequantize on any GPU, the arithmetic of kernels/quantize.hpp (the CPU's codes and
// scales), in 16-byte vectors of the float tensor where rows and groups allow. quantize: a warp a
// group (a row, or a block of a row), its largest |x| reduced by shuffles, then its codes (read
// again, from the cache); a dynamic per-tensor scale first reduces the whole tensor's largest |x|
// into one word with atomicMax on the bits (a maximum does not depend on the order, and a NaN's
// bits win). dequantize: rows over blocks, a chunk of codes a thread.
#include "fp8_codes.cuh"
#include "launch.cuh"

namespace xhal::gpu {
namespace {

constexpr int kThreads = 256, kWarps = kThreads / kWarpSize;

__device__ inline float warp_amax(float m) {
  for (int d = kWarpSize / 2; d > 0; d /= 2) m = kernels::amax_merge(m, warp_shfl_xor(m, d));
  return m;
}

// Rows over blocks, columns over threads (no division by the row length an element).
template <class E, int VEC>
__global__ void __launch_bounds__(kThreads) tensor_amax_kernel(const typename E::T* x, RowLayout xl, unsigned* amax) {
  float m = 0.0f;
  for (int64_t r = blockIdx.x; r < xl.rows; r += gridDim.x) {
    const typename E::T* row = x + xl.offset(r);
    for (int64_t i = int64_t(threadIdx.x) * VEC; i < xl.cols; i += int64_t(blockDim.x) * VEC) {
      Chunk<E, VEC> v;
      v.load(row + i);
      for (int k = 0; k < VEC; ++k) m = kernels::amax_merge(m, v.get(k));
    }
  }
  m = warp_amax(m);
  if (threadIdx.x % kWarpSize == 0) atomicMax(amax, __float_as_uint(m));
}

// group_lanes lanes a group (a power of two up to a warp: a short group, such as a 1 x 128 block
// of 16-byte chunks, takes fewer lanes and a warp several groups at once), VEC elements a lane at a
// time (groups start at multiples of VEC). tensor_amax: the dynamic per-tensor scale's amax word
// (block 0 writes the scale), else null.
template <class E, int VEC>
__global__ void __launch_bounds__(kThreads)
    quantize_kernel(const typename E::T* x, RowLayout xl, uint8_t* q, RowLayout ql, float* scale,
                    kernels::QuantGroups groups, bool dynamic, kernels::QuantFormat format, const unsigned* tensor_amax,
                    int group_lanes) {
  const int64_t width = groups.width(xl.cols), per_row = width > 0 ? (xl.cols + width - 1) / width : 0;
  const int64_t tasks = xl.rows * per_row, step = int64_t(group_lanes) * VEC;
  float tensor_scale = 0.0f;
  if (tensor_amax != nullptr) {
    tensor_scale = kernels::scale_of(__uint_as_float(*tensor_amax), format);
    if (blockIdx.x == 0 && threadIdx.x == 0) scale[0] = tensor_scale;
  }
  for_row_tasks(tasks, group_lanes, [&](int64_t task, bool valid, int sub) {
    int64_t r = 0, c0 = 0, c1 = 0;  // a lane past the last group has an empty one
    if (valid) {
      r = task / per_row, c0 = task % per_row * width;
      c1 = c0 + width < xl.cols ? c0 + width : xl.cols;
    }
    const typename E::T* row = x + xl.offset(r);
    float s;
    if (tensor_amax != nullptr) {
      s = tensor_scale;
    } else if (dynamic && groups.granularity != XHAL_QUANT_PER_TENSOR) {
      float m = 0.0f;
      for (int64_t i = c0 + sub * VEC; i < c1; i += step) {
        Chunk<E, VEC> v;
        v.load(row + i);
        for (int k = 0; k < VEC; ++k) m = kernels::amax_merge(m, v.get(k));
      }
      for (int d = group_lanes / 2; d > 0; d /= 2) m = kernels::amax_merge(m, warp_shfl_xor(m, d));
      s = kernels::scale_of(m, format);
      if (sub == 0 && valid) scale[groups.of(r, c0)] = s;
    } else {
      s = valid ? scale[groups.of(r, c0)] : 1.0f;
    }
    uint8_t* out = q + ql.offset(r);
    const float inverse = kernels::inverse_scale(s);
    for (int64_t i = c0 + sub * VEC; i < c1; i += step) {
      Chunk<E, VEC> v;
      v.load(row + i);
      *reinterpret_cast<Codes<VEC>*>(out + i) = codes_of<VEC>(v, inverse, format);
    }
  });
}

// Rows over blocks, VEC columns a thread; a chunk's VEC codes share a scale (groups are multiples
// of VEC long), looked up once.
template <class E, int VEC>
__global__ void __launch_bounds__(kThreads)
    dequantize_kernel(const uint8_t* q, RowLayout ql, const float* scale, typename E::T* out, RowLayout ol,
                      kernels::QuantGroups groups, kernels::QuantFormat format) {
  for (int64_t r = blockIdx.x; r < ql.rows; r += gridDim.x) {
    const uint8_t* in = q + ql.offset(r);
    typename E::T* o = out + ol.offset(r);
    for (int64_t i = int64_t(threadIdx.x) * VEC; i < ql.cols; i += int64_t(blockDim.x) * VEC) {
      const Codes<VEC> codes = *reinterpret_cast<const Codes<VEC>*>(in + i);
      const float s = scale[groups.of(r, i)];
      float f[VEC];
      for (int k = 0; k < VEC; ++k) f[k] = kernels::dequantize_value(codes.b[k], s, format);
      Chunk<E, VEC> v;
      v.set(f);
      v.store(o + i);
    }
  }
}

// Whether rows of x (or out) and of the codes take VEC-wide chunks: 16-byte vectors of the float
// tensor, and groups whose lengths are multiples of VEC.
inline bool chunks_fit(const DLTensor* wide, const DLTensor* codes, int64_t cols, const kernels::QuantGroups& groups,
                       int vec) {
  return rows_vectorizable(wide, cols) && rows_vectorizable(codes, cols) && groups.width(cols) % vec == 0;
}

template <class E>
struct Quantize {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    using T = typename E::T;
    constexpr int kVec = Vec<E>::kVec;
    const DLTensor *x = c->tensors[XHAL_QUANTIZE_X], *q = c->tensors[XHAL_QUANTIZE_Q];
    float* scale = static_cast<float*>(c->tensors[XHAL_QUANTIZE_SCALE]->data);
    const RowLayout xl = row_layout(x), ql = row_layout(q);
    const kernels::QuantGroups groups = kernels::quant_groups(c, xl.cols);
    const bool dynamic = kernels::op_params<xhal_quantize_op_params>(c).dynamic != 0;
    const kernels::QuantFormat format = kernels::quant_format(q);
    const bool vectorized = chunks_fit(x, q, xl.cols, groups, kVec);
    const gpuStream_t stream = static_cast<gpuStream_t>(c->stream);
    const T* xd = static_cast<const T*>(x->data);
    void* amax = nullptr;
    if (dynamic && groups.granularity == XHAL_QUANT_PER_TENSOR) {
      if (const xhal_status s =
              c->host->scratch_alloc(c->host->ctx, c->device, sizeof(unsigned), c->stream, &amax, msg, len);
          s != XHAL_OK) {
        return s;
      }
      if (gpuMemsetAsync(amax, 0, sizeof(unsigned), stream) != gpuSuccess) {
        c->host->scratch_free(c->host->ctx, c->device, amax);
        return kernel_error(msg, len, XHAL_ERR_DEVICE, "quantize: clearing the amax word failed");
      }
      const unsigned grid = grid_for(xl.rows, 1, 4096);
      if (vectorized) {
        tensor_amax_kernel<E, kVec><<<grid, kThreads, 0, stream>>>(xd, xl, static_cast<unsigned*>(amax));
      } else {
        tensor_amax_kernel<E, 1><<<grid, kThreads, 0, stream>>>(xd, xl, static_cast<unsigned*>(amax));
      }
    }
    const int64_t width = groups.width(xl.cols), per_row = width > 0 ? (xl.cols + width - 1) / width : 0;
    // Lanes a group: its chunks, where that is a power of two below a warp; else the whole warp.
    const int64_t chunks = width / (vectorized ? kVec : 1);
    const int group_lanes = chunks > 0 && chunks < kWarpSize && (chunks & (chunks - 1)) == 0 ? int(chunks) : kWarpSize;
    auto go = [&](auto kernel) {
      kernel<<<grid_for(xl.rows * per_row, int64_t(kWarps) * (kWarpSize / group_lanes), int64_t(1) << 20), kThreads, 0,
               stream>>>(xd, xl, static_cast<uint8_t*>(q->data), ql, scale, groups, dynamic, format,
                         static_cast<const unsigned*>(amax), group_lanes);
    };
    if (vectorized) {
      go(quantize_kernel<E, kVec>);
    } else {
      go(quantize_kernel<E, 1>);
    }
    const xhal_status status = launch_status(msg, len, "quantize");
    if (amax != nullptr) c->host->scratch_free(c->host->ctx, c->device, amax);
    return status;
  }
};

template <class E>
struct Dequantize {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    using T = typename E::T;
    constexpr int kVec = Vec<E>::kVec;
    const DLTensor *q = c->tensors[XHAL_DEQUANTIZE_Q], *out = c->tensors[XHAL_DEQUANTIZE_OUT];
    const RowLayout ql = row_layout(q), ol = row_layout(out);
    if (ql.rows * ql.cols == 0) return XHAL_OK;
    const kernels::QuantGroups groups = kernels::quant_groups(c, ql.cols);
    auto go = [&](auto kernel) {
      kernel<<<grid_for(ql.rows, 1, 4096), kThreads, 0, static_cast<gpuStream_t>(c->stream)>>>(
          static_cast<const uint8_t*>(q->data), ql, static_cast<const float*>(c->tensors[XHAL_DEQUANTIZE_SCALE]->data),
          static_cast<T*>(out->data), ol, groups, kernels::quant_format(q));
    };
    if (chunks_fit(out, q, ql.cols, groups, kVec)) {
      go(dequantize_kernel<E, kVec>);
    } else {
      go(dequantize_kernel<E, 1>);
    }
    return launch_status(msg, len, "dequantize");
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<Quantize>(host, XHAL_GPU_BACKEND ".quantize", XHAL_OP_QUANTIZE);
  register_float_kernels<Dequantize>(host, XHAL_GPU_BACKEND ".dequantize", XHAL_OP_DEQUANTIZE);
}

}  // namespace xhal::gpu

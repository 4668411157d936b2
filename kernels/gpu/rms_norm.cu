// rms_norm and fused_add_rms_norm on the GPU. Aligned rows of up to 16384 16-bit elements take the
// rows-in-registers kernel (a group of warps per row, every load issued before the reduction);
// longer aligned rows that fit in shared memory take the staged kernel (the next row loads
// asynchronously while the current one is reduced); anything else a grid sized to fill the GPU
// once, each block looping over rows held in registers (the weight stays in L1 across a block's
// rows). x is read once; 16-byte vectors when rows are aligned, scalars otherwise. Rows too long
// for registers or shared memory take a second pass.
#include "launch.cuh"
#include "async_copy.cuh"

namespace xhal::gpu {
namespace {

// VPT: chunks held per thread; 0 = the row does not fit, read it twice. Rows are held in their
// 16-bit form (half the registers of f32) and converted where used, so that 64 registers suffice
// and 1024-thread blocks or several smaller ones fit on a multiprocessor.
template <class E, int VEC, int VPT>
__global__ void __launch_bounds__(1024)
    rms_norm_kernel(const typename E::T* __restrict__ x, RowLayout xl, const typename E::T* __restrict__ weight,
                    typename E::T* out, RowLayout ol, typename E::T* residual, RowLayout rl, float eps) {
  using T = typename E::T;
  __shared__ float scratch[1024 / kWarpSize];
  const int64_t cols = xl.cols, vecs = cols / VEC;
  constexpr int kSlots = VPT > 0 ? VPT : 1;
  for (int64_t row = blockIdx.x; row < xl.rows; row += gridDim.x) {
    const T* xr = x + xl.offset(row);
    T* rr = residual ? residual + rl.offset(row) : nullptr;
    Chunk<E, VEC> held[kSlots];
    float sumsq = 0.0f;
    // Loads chunk c of x (+ residual, stored back rounded: the norm sees the stored value).
    auto load = [&](int64_t c, Chunk<E, VEC>& h) {
      h.load(xr + c * VEC);
      if (rr != nullptr) {
        Chunk<E, VEC> r;
        r.load(rr + c * VEC);
        for (int k = 0; k < VEC; ++k) h.v.v[k] = E::store(h.get(k) + r.get(k));
        h.store(rr + c * VEC);
      }
      for (int k = 0; k < VEC; ++k) sumsq += h.get(k) * h.get(k);
    };
    if constexpr (VPT > 0) {
#pragma unroll
      for (int i = 0; i < VPT; ++i) {
        const int64_t c = int64_t(i) * blockDim.x + threadIdx.x;
        if (c < vecs) load(c, held[i]);
      }
    } else {
      for (int64_t c = threadIdx.x; c < vecs; c += blockDim.x) load(c, held[0]);
    }
    const float inv_rms = rsqrtf(block_sum(sumsq, scratch) / float(cols) + eps);
    T* orow = out + ol.offset(row);
    auto write = [&](int64_t c, const Chunk<E, VEC>& h, const Chunk<E, VEC>& w) {
      Chunk<E, VEC> o;
      for (int k = 0; k < VEC; ++k) o.v.v[k] = E::store(h.get(k) * inv_rms * w.get(k));
      o.store(orow + c * VEC);
    };
    if constexpr (VPT > 0) {
#pragma unroll
      for (int i = 0; i < VPT; ++i) {
        const int64_t c = int64_t(i) * blockDim.x + threadIdx.x;
        if (c < vecs) {
          Chunk<E, VEC> w;  // the block's rows share it: an L1 hit after the first row
          w.load(weight + c * VEC);
          write(c, held[i], w);
        }
      }
    } else {
      // Second pass: the row (residual already updated) is read again, mostly from L2.
      const T* src = rr != nullptr ? rr : xr;
      for (int64_t c = threadIdx.x; c < vecs; c += blockDim.x) {
        Chunk<E, VEC> h, w;
        h.load(src + c * VEC);
        w.load(weight + c * VEC);
        write(c, h, w);
      }
    }
  }
}

// Rows that fit in shared memory: each block loops over rows and stages the next rows (and their
// residuals) with asynchronous copies while it reduces and writes the current one, so a row's
// worth of loads or more per block is always in flight and few registers are needed.
// kStagedThreads: 256, or 128 for rows of up to 512 vectors (more blocks per multiprocessor, so
// more rows in flight when each row is short). kStages: row buffers; with 3 the block keeps two
// rows ahead in flight (short rows without a residual).
template <class E, int kStagedThreads, int kStages>
__global__ void __launch_bounds__(kStagedThreads)
    rms_norm_staged_kernel(const typename E::T* __restrict__ x, RowLayout xl, const typename E::T* __restrict__ weight,
                           typename E::T* out, RowLayout ol, typename E::T* residual, RowLayout rl, float eps) {
  using T = typename E::T;
  constexpr int kVec = Vec<E>::kVec;
  __shared__ float scratch[kStagedThreads / kWarpSize];
  extern __shared__ __align__(16) unsigned char staged_raw[];
  const int64_t cols = xl.cols, vecs = cols / kVec;
  T* bx = reinterpret_cast<T*>(staged_raw);  // [kStages][cols] x, then [kStages][cols] residual
  T* br = bx + kStages * cols;
  auto prefetch = [&](int64_t row, int s) {
    const T* xr = x + xl.offset(row);
    const T* rr = residual ? residual + rl.offset(row) : nullptr;
    for (int64_t c = threadIdx.x; c < vecs; c += kStagedThreads) {
      copy16<E>(bx + s * cols + c * kVec, xr + c * kVec, true);
      if (rr) copy16<E>(br + s * cols + c * kVec, rr + c * kVec, true);
    }
    copy_commit();
  };
  for (int k = 0; k + 1 < kStages; ++k) {
    const int64_t row = blockIdx.x + int64_t(k) * gridDim.x;
    if (row < xl.rows) prefetch(row, k);
  }
  int s = 0;
  for (int64_t row = blockIdx.x; row < xl.rows; row += gridDim.x, s = (s + 1) % kStages) {
    const int64_t ahead = row + int64_t(kStages - 1) * gridDim.x;
    if (ahead < xl.rows) {
      prefetch(ahead, (s + kStages - 1) % kStages);
      copy_wait<kStages - 1>();  // this row's copy is the oldest group in flight
    } else {
      copy_wait<0>();
    }
    __syncthreads();
    T* xs = bx + s * cols;
    T* rg = residual ? residual + rl.offset(row) : nullptr;
    float sumsq = 0.0f;
    for (int64_t c = threadIdx.x; c < vecs; c += kStagedThreads) {
      Vec<E> v = Vec<E>::load_from(xs + c * kVec);
      if (rg != nullptr) {  // residual = x + residual, stored rounded; the norm sees the stored value
        const Vec<E> r = Vec<E>::load_from(br + s * cols + c * kVec);
        for (int k = 0; k < kVec; ++k) v.v[k] = E::store(E::load(v.v[k]) + E::load(r.v[k]));
        v.store_to(rg + c * kVec);
        v.store_to(xs + c * kVec);  // read back by this same thread below
      }
      for (int k = 0; k < kVec; ++k) sumsq += E::load(v.v[k]) * E::load(v.v[k]);
    }
    const float inv_rms = rsqrtf(block_sum(sumsq, scratch) / float(cols) + eps);
    T* orow = out + ol.offset(row);
    for (int64_t c = threadIdx.x; c < vecs; c += kStagedThreads) {
      const Vec<E> v = Vec<E>::load_from(xs + c * kVec), w = Vec<E>::load_from(weight + c * kVec);
      Vec<E> o;
      for (int k = 0; k < kVec; ++k) o.v[k] = E::store(E::load(v.v[k]) * inv_rms * E::load(w.v[k]));
      o.store_to(orow + c * kVec);
    }
    __syncthreads();  // buffer s is refilled kStages - 1 rows later
  }
}

// Rows of up to kWarps * kWarpSize * kVpl vectors, held in registers by a group of kWarps warps:
// every load of the row is issued before the first use, and the sum of squares reduces with warp
// shuffles (plus one barrier across the group's warps when kWarps > 1), so a warp never waits on
// unrelated rows. Blocks of 256 threads hold 256 / (kWarps * warp width) rows at a time.
constexpr int kRowThreads = 256;

template <class E, int kWarps, int kVpl, bool kResidual>
__global__ void __launch_bounds__(kRowThreads)
    rms_norm_rows_kernel(const typename E::T* __restrict__ x, RowLayout xl, const typename E::T* __restrict__ weight,
                         typename E::T* out, RowLayout ol, typename E::T* residual, RowLayout rl, float eps) {
  using T = typename E::T;
  constexpr int kVec = Vec<E>::kVec;
  constexpr int kGroupThreads = kWarps * kWarpSize;
  constexpr int kGroups = kRowThreads / kGroupThreads;
  __shared__ float partial[2][kRowThreads / kWarpSize];  // two sets: one barrier per row suffices
  const int warp = threadIdx.x / kWarpSize, group = warp / kWarps;
  const int t = threadIdx.x % kGroupThreads;
  const int vecs = int(xl.cols / kVec);
  int parity = 0;
  // The trip count is the same for every thread of the block (the group barrier needs it).
  for (int64_t first = int64_t(blockIdx.x) * kGroups; first < xl.rows; first += int64_t(gridDim.x) * kGroups) {
    const int64_t row = first + group;
    const bool active = row < xl.rows;
    Vec<E> held[kVpl];
    float sumsq = 0.0f;
    if (active) {
      const T* xr = x + xl.offset(row);
#pragma unroll
      for (int i = 0; i < kVpl; ++i) {
        const int c = i * kGroupThreads + t;
        if (c < vecs) held[i] = Vec<E>::load_from(xr + c * kVec);
      }
      if constexpr (kResidual) {  // residual = x + residual, stored rounded; the norm sees it
        T* rr = residual + rl.offset(row);
        Vec<E> r[kVpl];
#pragma unroll
        for (int i = 0; i < kVpl; ++i) {
          const int c = i * kGroupThreads + t;
          if (c < vecs) r[i] = Vec<E>::load_from(rr + c * kVec);
        }
#pragma unroll
        for (int i = 0; i < kVpl; ++i) {
          const int c = i * kGroupThreads + t;
          if (c >= vecs) continue;
          for (int k = 0; k < kVec; ++k) held[i].v[k] = E::store(E::load(held[i].v[k]) + E::load(r[i].v[k]));
          held[i].store_to(rr + c * kVec);
        }
      }
#pragma unroll
      for (int i = 0; i < kVpl; ++i) {
        if (i * kGroupThreads + t >= vecs) continue;
        for (int k = 0; k < kVec; ++k) sumsq += E::load(held[i].v[k]) * E::load(held[i].v[k]);
      }
    }
    sumsq = warp_sum(sumsq);
    if constexpr (kWarps > 1) {
      if (threadIdx.x % kWarpSize == 0) partial[parity][warp] = sumsq;
      __syncthreads();
      sumsq = 0.0f;
      for (int w = 0; w < kWarps; ++w) sumsq += partial[parity][group * kWarps + w];
      parity ^= 1;
    }
    if (!active) continue;
    const float inv_rms = rsqrtf(sumsq / float(xl.cols) + eps);
    T* orow = out + ol.offset(row);
#pragma unroll
    for (int i = 0; i < kVpl; ++i) {
      const int c = i * kGroupThreads + t;
      if (c >= vecs) continue;
      const Vec<E> w = Vec<E>::load_from(weight + c * kVec);  // an L1/L2 hit after the first rows
      Vec<E> o;
      for (int k = 0; k < kVec; ++k) o.v[k] = E::store(E::load(held[i].v[k]) * inv_rms * E::load(w.v[k]));
      o.store_to(orow + c * kVec);
    }
  }
}

template <class E, int kWarps, int kVpl, bool kResidual>
bool launch_rows(const xhal_op_call* c, gpuStream_t stream) {
  using T = typename E::T;
  const DLTensor* x = c->tensors[XHAL_RMS_NORM_X];
  const DLTensor* res = kernels::tensor_at(c, XHAL_FUSED_ADD_RMS_NORM_RESIDUAL);
  const RowLayout xl = row_layout(x);
  // A block per group of rows (measured faster than one wave of blocks looping over rows: the
  // hardware starts a new block as soon as one finishes).
  constexpr int64_t kGroups = kRowThreads / (kWarps * kWarpSize);
  rms_norm_rows_kernel<E, kWarps, kVpl, kResidual><<<grid_for(xl.rows, kGroups), kRowThreads, 0, stream>>>(
      static_cast<const T*>(x->data), xl, static_cast<const T*>(c->tensors[XHAL_RMS_NORM_WEIGHT]->data),
      static_cast<T*>(c->tensors[XHAL_RMS_NORM_OUT]->data), row_layout(c->tensors[XHAL_RMS_NORM_OUT]),
      res ? static_cast<T*>(res->data) : nullptr, res ? row_layout(res) : RowLayout{},
      kernels::op_params<xhal_norm_op_params>(c).eps);
  return true;
}

// Launches the rows-in-registers kernel when some (warps, vectors per lane) shape holds a row,
// with at most 16 vectors per lane (8 with a residual, whose vectors are held too) so that about
// 64 registers hold the data. Short rows spread over more warps (a block per 4096-element row
// measured 5% faster than a warp per row); 8192-element rows are fastest on 2 warps of 16.
// False when the row is too long.
template <class E>
bool launch_rows_in_registers(const xhal_op_call* c, gpuStream_t stream) {
  const DLTensor* x = c->tensors[XHAL_RMS_NORM_X];
  const int64_t vecs = x->shape[x->ndim - 1] / Vec<E>::kVec;
  if (kernels::tensor_at(c, XHAL_FUSED_ADD_RMS_NORM_RESIDUAL) != nullptr) {
    if (vecs <= kWarpSize * 4) return launch_rows<E, 1, 4, true>(c, stream);
    if (vecs <= kWarpSize * 8) return launch_rows<E, 2, 4, true>(c, stream);
    if (vecs <= kWarpSize * 16) return launch_rows<E, 4, 4, true>(c, stream);
    if (vecs <= kWarpSize * 32) return launch_rows<E, 4, 8, true>(c, stream);
    return false;
  }
  if (vecs <= kWarpSize * 4) return launch_rows<E, 1, 4, false>(c, stream);
  if (vecs <= kWarpSize * 8) return launch_rows<E, 2, 4, false>(c, stream);
  if (vecs <= kWarpSize * 16) return launch_rows<E, 4, 4, false>(c, stream);
  if (vecs <= kWarpSize * 32) return launch_rows<E, 2, 16, false>(c, stream);
  if (vecs <= kWarpSize * 64) return launch_rows<E, 4, 16, false>(c, stream);
  return false;
}

inline size_t staged_bytes(int64_t cols, size_t elt, bool residual, int stages) {
  return (residual ? 2 : 1) * size_t(stages) * size_t(cols) * elt;
}
constexpr size_t kMaxStagedBytes = std::min(96 * 1024, kMaxDynamicSharedBytes);

template <class E, int VEC>
void launch_with_vec(const xhal_op_call* c, gpuStream_t stream) {
  using T = typename E::T;
  const DLTensor* x = c->tensors[XHAL_RMS_NORM_X];
  const DLTensor* res = kernels::tensor_at(c, XHAL_FUSED_ADD_RMS_NORM_RESIDUAL);
  const RowLayout xl = row_layout(x), ol = row_layout(c->tensors[XHAL_RMS_NORM_OUT]);
  const RowLayout rl = res ? row_layout(res) : RowLayout{};
  const int64_t vecs = xl.cols / VEC;
  // About 4 vectors per thread keeps several loads in flight; at most 1024 threads.
  const int threads = block_threads((vecs + 3) / 4, 1024);
  const int64_t per_thread = (vecs + threads - 1) / threads;
  // One wave of blocks, each looping over rows (measured faster than a block per row at 65536 rows).
  const unsigned grid = grid_for(xl.rows, 1, int64_t(multiprocessor_count(c->device)) * (2048 / threads));
  auto go = [&](auto kernel) {
    kernel<<<grid, threads, 0, stream>>>(
        static_cast<const T*>(x->data), xl, static_cast<const T*>(c->tensors[XHAL_RMS_NORM_WEIGHT]->data),
        static_cast<T*>(c->tensors[XHAL_RMS_NORM_OUT]->data), ol, res ? static_cast<T*>(res->data) : nullptr, rl,
        kernels::op_params<xhal_norm_op_params>(c).eps);
  };
  if (per_thread <= 1)
    go(rms_norm_kernel<E, VEC, 1>);
  else if (per_thread <= 2)
    go(rms_norm_kernel<E, VEC, 2>);
  else if (per_thread <= 4)
    go(rms_norm_kernel<E, VEC, 4>);
  else if (per_thread <= 8)
    go(rms_norm_kernel<E, VEC, 8>);
  else
    go(rms_norm_kernel<E, VEC, 0>);
}

template <class E>
struct RmsNormKernel {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    const DLTensor* x = c->tensors[XHAL_RMS_NORM_X];
    const int64_t cols = x->shape[x->ndim - 1];
    if (cols == 0 || row_layout(x).rows == 0) return XHAL_OK;
    bool vectorizable = rows_vectorizable(x, cols) && rows_vectorizable(c->tensors[XHAL_RMS_NORM_OUT], cols) &&
                        rows_vectorizable(c->tensors[XHAL_RMS_NORM_WEIGHT], cols);
    if (const DLTensor* res = kernels::tensor_at(c, XHAL_FUSED_ADD_RMS_NORM_RESIDUAL))
      vectorizable &= rows_vectorizable(res, cols);
    auto stream = static_cast<gpuStream_t>(c->stream);
    const DLTensor* res = kernels::tensor_at(c, XHAL_FUSED_ADD_RMS_NORM_RESIDUAL);
    const bool short_rows = cols / Vec<E>::kVec <= 512;
    // Three buffers measured better for short rms_norm rows, worse for fused ones (whose residual
    // doubles the buffers, so fewer blocks fit).
    const int stages = short_rows && res == nullptr ? 3 : 2;
    const size_t staged = staged_bytes(cols, sizeof(typename E::T), res != nullptr, stages);
    if (vectorizable && launch_rows_in_registers<E>(c, stream)) {
      // launched
    } else if (vectorizable && staged <= kMaxStagedBytes) {
      using T = typename E::T;
      static const bool raised = [] {
        allow_shared_bytes(rms_norm_staged_kernel<E, 128, 3>, kMaxStagedBytes);
        allow_shared_bytes(rms_norm_staged_kernel<E, 128, 2>, kMaxStagedBytes);
        allow_shared_bytes(rms_norm_staged_kernel<E, 256, 2>, kMaxStagedBytes);
        return true;
      }();
      (void)raised;
      const RowLayout xl = row_layout(x);
      const int64_t per_sm = std::max<int64_t>(
          1, std::min<int64_t>(short_rows ? 16 : 8, int64_t(kMaxDynamicSharedBytes) / int64_t(staged)));
      const unsigned grid = grid_for(xl.rows, 1, multiprocessor_count(c->device) * per_sm);
      auto go = [&](auto kernel, int threads) {
        kernel<<<grid, threads, staged, stream>>>(
            static_cast<const T*>(x->data), xl, static_cast<const T*>(c->tensors[XHAL_RMS_NORM_WEIGHT]->data),
            static_cast<T*>(c->tensors[XHAL_RMS_NORM_OUT]->data), row_layout(c->tensors[XHAL_RMS_NORM_OUT]),
            res ? static_cast<T*>(res->data) : nullptr, res ? row_layout(res) : RowLayout{},
            kernels::op_params<xhal_norm_op_params>(c).eps);
      };
      if (short_rows && stages == 3)
        go(rms_norm_staged_kernel<E, 128, 3>, 128);
      else if (short_rows)
        go(rms_norm_staged_kernel<E, 128, 2>, 128);
      else
        go(rms_norm_staged_kernel<E, 256, 2>, 256);
    } else if (vectorizable) {
      launch_with_vec<E, Vec<E>::kVec>(c, stream);
    } else {
      launch_with_vec<E, 1>(c, stream);
    }
    return launch_status(msg, len, "rms_norm");
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<RmsNormKernel>(host, XHAL_GPU_BACKEND ".rms_norm", XHAL_OP_RMS_NORM);
  register_float_kernels<RmsNormKernel>(host, XHAL_GPU_BACKEND ".fused_add_rms_norm", XHAL_OP_FUSED_ADD_RMS_NORM);
}

}  // namespace xhal::gpu

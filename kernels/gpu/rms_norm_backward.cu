// rms_norm_backward and fused_add_rms_norm_backward on the GPU. With r = rsqrt(mean(x^2) + eps)
// and g = dout * weight: dx = r * (g - x * r^2 * mean(g * x)), dweight = sum over rows of
// dout * x * r.
//
// Rows that fit in registers: a block holds several groups of warps, each group one row at a time
// (every load of the row issued before its two sums are reduced); each thread keeps the dweight
// terms of its columns in f32 registers across the rows its group takes. At the end the block's
// groups are added in group order in shared memory and the block writes one f32 row of partial
// sums; a second kernel adds the blocks' rows in block order. Blocks stay resident and loop over
// rows (a grid of one wave), so there are few partial rows to write and read back (under 1% of
// the traffic at 16384 x 4096), and no atomics: dweight has the same bits run to run on a device.
// Longer rows are read twice, the partial sums kept in the block's row in global memory.
#include "async_copy.cuh"
#include "launch.cuh"

namespace xhal::gpu {
namespace {

// Threads of a block of the rows kernel. At two chunks a thread two blocks fit on a multiprocessor
// (64 registers each), so one's loads keep memory busy while the other waits at a barrier; at four,
// one block with the registers to hold them.
constexpr int kRowsBlock = 512;

struct NormBackwardArgs {
  const void* dout;
  RowLayout dl;
  const void* x;  // the fused op's residual
  RowLayout xl;
  const void* weight;
  void* dx;
  RowLayout dxl;
  void* dres;  // fused op only, else null
  RowLayout rl;
  float* partial;  // [gridDim.x, cols] f32
  float eps;
  bool dx_is_dres;  // the fused op called in place: write the gradient once
};

// Sums of two values over the threads of each group of `group_warps` warps, each group waiting on
// its own barrier. Two sets of slots, used in turn: one barrier per call suffices (a group's slots
// are rewritten only after each of its threads has passed the barrier that follows its reads).
__device__ inline float2 group_sum2(float a, float b, float2 (*slots)[kRowsBlock / kWarpSize], int& parity,
                                    int group_warps) {
  a = warp_sum(a);
  b = warp_sum(b);
  const int warp = threadIdx.x / kWarpSize, first = warp / group_warps * group_warps;
  if (threadIdx.x % kWarpSize == 0) slots[parity][warp] = make_float2(a, b);
  group_barrier(1 + warp / group_warps, group_warps * kWarpSize);
  float2 total = make_float2(0.0f, 0.0f);
  for (int w = 0; w < group_warps; ++w) {
    total.x += slots[parity][first + w].x;
    total.y += slots[parity][first + w].y;
  }
  parity ^= 1;
  return total;
}

// Staged rows need cp.async and more shared memory than AMD's 64 KiB a block: NVIDIA only.
#if defined(__HIPCC__)
constexpr bool kCanStage = false;
#else
constexpr bool kCanStage = true;
#endif

// Rows a group has staged (kStaged): the one it works on and the next.
constexpr int kStagedRows = 2;
inline size_t staged_row_bytes(int groups, int group_threads, int vpl, bool fused) {
  return size_t(groups) * kStagedRows * (fused ? 3 : 2) * size_t(vpl) * size_t(group_threads) * 16;
}

// VPL chunks of VEC elements per thread, in groups of group_threads (whole warps) per row. With
// four chunks a thread the registers allow one block per multiprocessor. kGroupThreads > 0 fixes
// the group size at compile time; kHoldWeight keeps the thread's weight chunks in registers (its
// columns are the same in every row) instead of reading them from L1 twice a row. kStaged (16-byte
// chunks): the group's next row is copied into shared memory (cp.async) while this one is used, so
// the loads of a row do not wait for the previous row's sums; each thread reads back only the
// chunks it copied, so its own wait suffices.
template <class E, int VEC, int VPL, bool kFused, int kGroupThreads = 0, bool kHoldWeight = false, bool kStaged = false>
__global__ void __launch_bounds__(kRowsBlock, VPL >= 4 ? 1 : 2)
    rms_norm_backward_rows_kernel(NormBackwardArgs a, int dynamic_group_threads) {
  using T = typename E::T;
  static_assert(!kStaged || VEC * sizeof(T) == 16, "staged rows are copied in 16-byte chunks");
  const int group_threads = kGroupThreads > 0 ? kGroupThreads : dynamic_group_threads;
  // [group_threads * VEC]: the groups' terms added in order; then, kStaged, the staged rows:
  // [groups][2 stages][x, dout, dresidual][VPL][group_threads] chunks.
  extern __shared__ float block_dw[];
  __shared__ float2 slots[2][kRowsBlock / kWarpSize];
  const int groups = blockDim.x / group_threads, group = threadIdx.x / group_threads;
  const int t = threadIdx.x % group_threads;
  const int64_t cols = a.xl.cols, chunks = cols / VEC;
  constexpr int kTensors = kFused ? 3 : 2;
  T* const staged = reinterpret_cast<T*>(block_dw + group_threads * VEC);
  const auto staged_chunk = [&](int stage, int tensor, int i) {
    return staged + ((size_t(group * kStagedRows + stage) * kTensors + tensor) * VPL + i) * group_threads * VEC +
           t * VEC;
  };
  const auto stage_row = [&](int64_t row, int stage) {
    if (row < a.xl.rows) {
      const T* xr = static_cast<const T*>(a.x) + a.xl.offset(row);
      const T* dr = static_cast<const T*>(a.dout) + a.dl.offset(row);
      const T* rr = kFused ? static_cast<const T*>(a.dres) + a.rl.offset(row) : nullptr;
#pragma unroll
      for (int i = 0; i < VPL; ++i) {
        const int64_t c = int64_t(i) * group_threads + t;
        if (c >= chunks) continue;
        copy16<E>(staged_chunk(stage, 0, i), xr + c * VEC, true);
        copy16<E>(staged_chunk(stage, 1, i), dr + c * VEC, true);
        if constexpr (kFused) copy16<E>(staged_chunk(stage, 2, i), rr + c * VEC, true);
      }
    }
    copy_commit();
  };
  int stage = 0;  // of the row being worked on
  if constexpr (kStaged) stage_row(int64_t(blockIdx.x) * groups + group, 0);
  const T* weight = static_cast<const T*>(a.weight);
  float dw[VPL][VEC] = {};
  int parity = 0;
  Chunk<E, VEC> held_w[kHoldWeight ? VPL : 1];
  if constexpr (kHoldWeight) {
#pragma unroll
    for (int i = 0; i < VPL; ++i) {
      const int64_t c = int64_t(i) * group_threads + t;
      if (c < chunks) held_w[i].load(weight + c * VEC);
    }
  }
  // Every thread of the block makes the same number of trips (where groups share one barrier, as
  // on HIP, the group sums need all of them).
  for (int64_t first = int64_t(blockIdx.x) * groups; first < a.xl.rows; first += int64_t(gridDim.x) * groups) {
    const int64_t row = first + group;
    const bool active = row < a.xl.rows;
    // Staged, the fused op's residual gradient arrives with the row; unstaged it is loaded after
    // the sums (held across them, it spills at two chunks a thread).
    Chunk<E, VEC> xs[VPL], ds[VPL], rs[kFused ? VPL : 1];
    float sumsq = 0.0f, dot = 0.0f;
    T* rr = kFused && active ? static_cast<T*>(a.dres) + a.rl.offset(row) : nullptr;
    if constexpr (kStaged) {
      stage_row(row + int64_t(gridDim.x) * groups, stage ^ 1);
      copy_wait<1>();  // this thread's copies of `row`
    }
    if (active) {
      const T* xr = static_cast<const T*>(a.x) + a.xl.offset(row);
      const T* dr = static_cast<const T*>(a.dout) + a.dl.offset(row);
#pragma unroll
      for (int i = 0; i < VPL; ++i) {
        const int64_t c = int64_t(i) * group_threads + t;
        if (c >= chunks) continue;
        if constexpr (kStaged) {
          xs[i].load(staged_chunk(stage, 0, i)), ds[i].load(staged_chunk(stage, 1, i));
          if constexpr (kFused) rs[i].load(staged_chunk(stage, 2, i));
        } else {
          xs[i].load(xr + c * VEC), ds[i].load(dr + c * VEC);
        }
      }
#pragma unroll
      for (int i = 0; i < VPL; ++i) {
        const int64_t c = int64_t(i) * group_threads + t;
        if (c >= chunks) continue;
        Chunk<E, VEC> w;  // every row of the block reads it: an L1 hit after the first
        if constexpr (kHoldWeight)
          w = held_w[i];
        else
          w.load(weight + c * VEC);
        for (int k = 0; k < VEC; ++k) {
          const float xv = xs[i].get(k);
          sumsq += xv * xv;
          dot += ds[i].get(k) * w.get(k) * xv;
        }
      }
    }
    stage ^= 1;
    const float2 sums = group_sum2(sumsq, dot, slots, parity, group_threads / kWarpSize);
    if (!active) continue;
    const float inv_rms = rsqrtf(sums.x / float(cols) + a.eps);
    const float coeff = inv_rms * inv_rms * sums.y / float(cols);
    T* dxr = static_cast<T*>(a.dx) + a.dxl.offset(row);
#pragma unroll
    for (int i = 0; i < VPL; ++i) {
      const int64_t c = int64_t(i) * group_threads + t;
      if (c >= chunks) continue;
      Chunk<E, VEC> w, o;
      if constexpr (kHoldWeight)
        w = held_w[i];
      else
        w.load(weight + c * VEC);
      if constexpr (kFused && !kStaged) rs[i].load(rr + c * VEC);
      float d[VEC];
      for (int k = 0; k < VEC; ++k) {
        const float xv = xs[i].get(k), dv = ds[i].get(k);
        d[k] = inv_rms * (dv * w.get(k) - xv * coeff);
        if constexpr (kFused) d[k] += rs[i].get(k);  // the gradient arriving on the residual stream
        dw[i][k] += dv * xv * inv_rms;
      }
      o.set(d);
      if constexpr (kFused) o.store(rr + c * VEC);
      if (!kFused || !a.dx_is_dres) o.store(dxr + c * VEC);
    }
  }
  // The block's partial row: its groups' terms added in group order.
#pragma unroll
  for (int i = 0; i < VPL; ++i) {
    for (int g = 0; g < groups; ++g) {
      if (group == g) {
        for (int k = 0; k < VEC; ++k) block_dw[t * VEC + k] = (g == 0 ? 0.0f : block_dw[t * VEC + k]) + dw[i][k];
      }
      __syncthreads();
    }
    const int64_t c = int64_t(i) * group_threads + t;
    if (group == 0 && c < chunks) {
      for (int k = 0; k < VEC; ++k) a.partial[int64_t(blockIdx.x) * cols + c * VEC + k] = block_dw[t * VEC + k];
    }
    __syncthreads();
  }
}

// Rows too long for registers: two passes over each row, the dweight terms added to the block's
// partial row in global memory (each element owned by one thread).
template <class E, int VEC, bool kFused>
__global__ void __launch_bounds__(1024) rms_norm_backward_long_kernel(NormBackwardArgs a) {
  using T = typename E::T;
  __shared__ float scratch[1024 / kWarpSize];
  const int64_t cols = a.xl.cols, chunks = cols / VEC;
  const T* weight = static_cast<const T*>(a.weight);
  float* partial = a.partial + int64_t(blockIdx.x) * cols;
  for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
    for (int k = 0; k < VEC; ++k) partial[c * VEC + k] = 0.0f;
  }
  for (int64_t row = blockIdx.x; row < a.xl.rows; row += gridDim.x) {
    const T* xr = static_cast<const T*>(a.x) + a.xl.offset(row);
    const T* dr = static_cast<const T*>(a.dout) + a.dl.offset(row);
    float sumsq = 0.0f, dot = 0.0f;
    for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      Chunk<E, VEC> xv, dv, w;
      xv.load(xr + c * VEC), dv.load(dr + c * VEC), w.load(weight + c * VEC);
      for (int k = 0; k < VEC; ++k) {
        sumsq += xv.get(k) * xv.get(k);
        dot += dv.get(k) * w.get(k) * xv.get(k);
      }
    }
    sumsq = block_sum(sumsq, scratch);
    dot = block_sum(dot, scratch);
    const float inv_rms = rsqrtf(sumsq / float(cols) + a.eps);
    const float coeff = inv_rms * inv_rms * dot / float(cols);
    T* dxr = static_cast<T*>(a.dx) + a.dxl.offset(row);
    T* rr = kFused ? static_cast<T*>(a.dres) + a.rl.offset(row) : nullptr;
    for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
      Chunk<E, VEC> xv, dv, w, r, o;
      xv.load(xr + c * VEC), dv.load(dr + c * VEC), w.load(weight + c * VEC);
      if constexpr (kFused) r.load(rr + c * VEC);
      for (int k = 0; k < VEC; ++k) {
        float d = inv_rms * (dv.get(k) * w.get(k) - xv.get(k) * coeff);
        if constexpr (kFused) d += r.get(k);
        o.v.v[k] = E::store(d);
        partial[c * VEC + k] += dv.get(k) * xv.get(k) * inv_rms;
      }
      if constexpr (kFused) o.store(rr + c * VEC);
      if (!kFused || !a.dx_is_dres) o.store(dxr + c * VEC);
    }
  }
}

// dweight[col] = the sum of the blocks' partial rows, in block order: 32 columns per block, 16
// lanes each adding every 16th row, the lanes then added in lane order.
constexpr int kSumColumns = 32, kSumLanes = 16;

template <class E>
__global__ void __launch_bounds__(kSumColumns* kSumLanes)
    dweight_sum_kernel(const float* partial, int64_t blocks, int64_t cols, typename E::T* dweight, int64_t stride) {
  __shared__ float lane_sums[kSumLanes][kSumColumns + 1];
  const int tx = threadIdx.x % kSumColumns, ty = threadIdx.x / kSumColumns;
  const int64_t col = int64_t(blockIdx.x) * kSumColumns + tx;
  float sum = 0.0f;
  if (col < cols) {
    for (int64_t b = ty; b < blocks; b += kSumLanes) sum += partial[b * cols + col];
  }
  lane_sums[ty][tx] = sum;
  __syncthreads();
  if (ty == 0 && col < cols) {
    float total = 0.0f;
    for (int l = 0; l < kSumLanes; ++l) total += lane_sums[l][tx];
    dweight[col * stride] = E::store(total);
  }
}

template <class E>
struct RmsNormBackwardKernel {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    using T = typename E::T;
    const DLTensor* x = c->tensors[XHAL_RMS_NORM_BACKWARD_X];
    const DLTensor* dres = kernels::tensor_at(c, XHAL_FUSED_ADD_RMS_NORM_BACKWARD_DRESIDUAL);
    const DLTensor* dweight = c->tensors[XHAL_RMS_NORM_BACKWARD_DWEIGHT];
    const char* name = dres ? "fused_add_rms_norm_backward" : "rms_norm_backward";
    NormBackwardArgs a{};
    a.dout = c->tensors[XHAL_RMS_NORM_BACKWARD_DOUT]->data, a.dl = row_layout(c->tensors[XHAL_RMS_NORM_BACKWARD_DOUT]);
    a.x = x->data, a.xl = row_layout(x);
    a.weight = c->tensors[XHAL_RMS_NORM_BACKWARD_WEIGHT]->data;
    a.dx = c->tensors[XHAL_RMS_NORM_BACKWARD_DX]->data, a.dxl = row_layout(c->tensors[XHAL_RMS_NORM_BACKWARD_DX]);
    a.dres = dres ? dres->data : nullptr, a.rl = dres ? row_layout(dres) : RowLayout{};
    a.eps = kernels::op_params<xhal_norm_op_params>(c).eps;
    a.dx_is_dres = dres != nullptr && dres->data == a.dx;  // the front end allows only the same view
    const int64_t cols = a.xl.cols, rows = a.xl.rows;
    if (cols == 0) return XHAL_OK;
    auto stream = static_cast<gpuStream_t>(c->stream);
    bool vectorizable = true;
    for (int slot : {XHAL_RMS_NORM_BACKWARD_DOUT, XHAL_RMS_NORM_BACKWARD_X, XHAL_RMS_NORM_BACKWARD_WEIGHT,
                     XHAL_RMS_NORM_BACKWARD_DX}) {
      vectorizable = vectorizable && rows_vectorizable(c->tensors[slot], cols);
    }
    if (dres != nullptr) vectorizable = vectorizable && rows_vectorizable(dres, cols);

    // The main kernel and its shape, chosen before the scratch is sized (its grid is one wave).
    Launch launch{};
    if (rows > 0)
      launch = vectorizable ? plan<Vec<E>::kVec>(cols, rows, dres != nullptr, c->device)
                            : plan<1>(cols, rows, dres != nullptr, c->device);
    void* scratch = nullptr;
    if (launch.grid > 0) {
      const size_t bytes = size_t(launch.grid) * size_t(cols) * sizeof(float);
      if (const xhal_status s = c->host->scratch_alloc(c->host->ctx, c->device, bytes, c->stream, &scratch, msg, len);
          s != XHAL_OK) {
        return s;  // the allocator's message names the request
      }
      a.partial = static_cast<float*>(scratch);
      launch.run(a, launch, stream);
    }
    dweight_sum_kernel<E><<<grid_for(cols, kSumColumns), kSumColumns * kSumLanes, 0, stream>>>(
        a.partial, launch.grid, cols, static_cast<T*>(dweight->data), dweight->strides[0]);
    const xhal_status status = launch_status(msg, len, name);
    if (scratch != nullptr) c->host->scratch_free(c->host->ctx, c->device, scratch);
    return status;
  }

 private:
  struct Launch {
    int64_t grid = 0;
    int threads = 0, group_threads = 0;
    size_t shared = 0;
    void (*run)(const NormBackwardArgs&, const Launch&, gpuStream_t) = nullptr;
  };

  template <int VEC, int VPL, bool kFused, int G = 0, bool W = false, bool S = false>
  static void start_rows(const NormBackwardArgs& a, const Launch& l, gpuStream_t stream) {
    rms_norm_backward_rows_kernel<E, VEC, VPL, kFused, G, W, S>
        <<<unsigned(l.grid), l.threads, l.shared, stream>>>(a, l.group_threads);
  }
  template <int VEC, bool kFused>
  static void start_long(const NormBackwardArgs& a, const Launch& l, gpuStream_t stream) {
    rms_norm_backward_long_kernel<E, VEC, kFused><<<unsigned(l.grid), l.threads, 0, stream>>>(a);
  }

  // As many groups of `group_threads` as a block holds, and one wave of blocks.
  template <int VEC, int VPL, bool kFused, int G = 0, bool W = false, bool S = false>
  static Launch rows_launch(int group_threads, int64_t rows, int device) {
    Launch l;
    const int groups = std::min(kRowsBlock / group_threads, kMaxGroupBarriers);
    l.group_threads = group_threads, l.threads = groups * group_threads;
    l.shared =
        size_t(group_threads) * VEC * sizeof(float) + (S ? staged_row_bytes(groups, group_threads, VPL, kFused) : 0);
    const auto kernel = rms_norm_backward_rows_kernel<E, VEC, VPL, kFused, G, W, S>;
    if (l.shared > 48 * 1024) allow_shared_bytes(kernel, l.shared);
    l.grid = std::min<int64_t>((rows + groups - 1) / groups, resident_blocks(kernel, l.threads, l.shared, device));
    l.run = &start_rows<VEC, VPL, kFused, G, W, S>;
    return l;
  }

  // Groups of whole warps, each thread holding up to four chunks of a row: four for
  // rms_norm_backward (one block of 512 threads per multiprocessor at up to 128 registers measured
  // faster than two at 64, which spill), two for the fused op up to a block's two chunks a thread
  // (its residual gradient takes registers too; four spill there). Rows of more than
  // 4 x kRowsBlock chunks (16384 16-bit elements) take the two-pass kernel.
  template <int VEC, bool kFused>
  static Launch plan_for(int64_t cols, int64_t rows, int device) {
    const int64_t chunks = cols / VEC;
    const auto warps_for = [](int64_t threads) { return int((threads + kWarpSize - 1) / kWarpSize * kWarpSize); };
    if (chunks <= kWarpSize) return rows_launch<VEC, 1, kFused>(kWarpSize, rows, device);
    // Rows of 128 threads of four chunks (4096 16-bit elements): the group size a constant, so
    // that chunk offsets fold into the addresses. rms_norm_backward holds the weight in registers
    // across rows (bf16: 128 registers, no spill): 118 -> 107 us at 16384 x 4096 bf16 on an H200;
    // f16's conversions leave no registers for it (12 bytes spilled) and f32 is unmeasured: both
    // read it from L1. The fused op stages its rows, residual gradient included (0.160 -> 0.155 ms
    // there; staging rms_norm_backward's two tensors, two or three rows deep, changed nothing).
    if (warps_for((chunks + 3) / 4) == 128) {
      constexpr bool kHold = E::kDType == XHAL_DTYPE_BF16 && !kFused;
      constexpr bool kStage = kFused && kCanStage && VEC * sizeof(typename E::T) == 16;
      if (kStage || !kFused) return rows_launch<VEC, 4, kFused, 128, kHold, kStage>(128, rows, device);
    }
    if (kFused && chunks <= 2 * kRowsBlock) {
      return rows_launch<VEC, 2, kFused>(warps_for((chunks + 1) / 2), rows, device);
    }
    if (chunks <= 4 * kRowsBlock) return rows_launch<VEC, 4, kFused>(warps_for((chunks + 3) / 4), rows, device);
    Launch l;
    l.threads = 1024;
    l.grid = std::min<int64_t>(rows, resident_blocks(rms_norm_backward_long_kernel<E, VEC, kFused>, 1024, 0, device));
    l.run = &start_long<VEC, kFused>;
    return l;
  }
  template <int VEC>
  static Launch plan(int64_t cols, int64_t rows, bool fused, int device) {
    return fused ? plan_for<VEC, true>(cols, rows, device) : plan_for<VEC, false>(cols, rows, device);
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<RmsNormBackwardKernel>(host, XHAL_GPU_BACKEND ".rms_norm_backward", XHAL_OP_RMS_NORM_BACKWARD);
  register_float_kernels<RmsNormBackwardKernel>(host, XHAL_GPU_BACKEND ".fused_add_rms_norm_backward",
                                                XHAL_OP_FUSED_ADD_RMS_NORM_BACKWARD);
}

}  // namespace xhal::gpu

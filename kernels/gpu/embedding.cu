// embedding and embedding_backward on any GPU.
// Forward: one block per token copies its row in 16-byte vectors (scalars when a row is not
// aligned); an id outside the table gives a NaN row (checking on the host would cost a copy and a
// synchronisation per call; the NaN reaches the loss).
// Backward, deterministic by construction: the tokens are sorted by id with a stable radix sort
// (CUB / rocPRIM), each run of equal ids in the sorted order (one picked row) records where it
// starts, and each row of dtable is written once: zeros by one kernel where no token picked it,
// the sum of its run's dout rows in token order, in f32, by another (one block per run and slice
// of columns). Tokens with padding_idx or an id
// outside the table are sorted past the last row and add nothing.
#include <cmath>

#include "launch.cuh"
#include "radix_sort.cuh"

namespace xhal::gpu {
namespace {

constexpr int kThreads = 128;

constexpr int kUnroll = 4;  // chunks of a row each thread loads before it stores any

template <class E, int VEC>
__global__ void __launch_bounds__(kThreads)
    gather_kernel(const void* ids, int64_t id_stride, bool wide_ids, const typename E::T* table, int64_t table_ld,
                  int64_t rows, typename E::T* out, int64_t out_ld, int64_t D) {
  const int64_t t = blockIdx.x;
  const int64_t id = index_at(ids, id_stride, wide_ids, t);
  typename E::T* dst = out + t * out_ld;
  if (id < 0 || id >= rows) {
    for (int64_t d = threadIdx.x; d < D; d += blockDim.x) dst[d] = E::store(NAN);
    return;
  }
  const typename E::T* src = table + id * table_ld;
  const int64_t step = int64_t(blockDim.x) * VEC;
  for (int64_t base = int64_t(threadIdx.x) * VEC; base < D; base += step * kUnroll) {
    Chunk<E, VEC> c[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (base + u * step < D) c[u].load(src + base + u * step);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      if (base + u * step < D) c[u].store(dst + base + u * step);
    }
  }
}

template <class E>
struct EmbeddingGather {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    using T = typename E::T;
    const DLTensor *ids = c->tensors[XHAL_EMBEDDING_IDS], *table = c->tensors[XHAL_EMBEDDING_TABLE];
    const DLTensor* out = c->tensors[XHAL_EMBEDDING_OUT];
    const int64_t T_ = out->shape[0], D = out->shape[1];
    if (T_ == 0 || D == 0) return XHAL_OK;
    if (T_ > 0x7fffffff) return kernel_error(msg, len, XHAL_ERR_UNSUPPORTED, "embedding: more than 2^31 tokens");
    const bool vec = rows_vectorizable(table, D) && rows_vectorizable(out, D);
    auto launch = [&](auto kernel) {
      kernel<<<unsigned(T_), kThreads, 0, static_cast<gpuStream_t>(c->stream)>>>(
          ids->data, ids->strides[0], ids->dtype.bits == 64, static_cast<const T*>(table->data), table->strides[0],
          table->shape[0], static_cast<T*>(out->data), out->strides[0], D);
    };
    if (vec) {
      launch(gather_kernel<E, Vec<E>::kVec>);
    } else {
      launch(gather_kernel<E, 1>);
    }
    return launch_status(msg, len, "embedding gather");
  }
};

// keys[t] = ids[t], or `rows` (past every row) for padding_idx and ids outside the table;
// values[t] = t.
__global__ void sort_keys_kernel(const void* ids, int64_t id_stride, bool wide_ids, int64_t T, int64_t rows,
                                 int64_t padding, uint32_t* keys, int32_t* values) {
  for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < T; t += int64_t(gridDim.x) * blockDim.x) {
    const int64_t id = index_at(ids, id_stride, wide_ids, t);
    keys[t] = uint32_t(id < 0 || id >= rows || id == padding ? rows : id);
    values[t] = int32_t(t);
  }
}

// run_start[keys[i]] = i where sorted position i starts a run of equal keys (a picked row).
__global__ void run_starts_kernel(const uint32_t* keys, int64_t T, uint32_t rows, int32_t* run_start) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < T; i += int64_t(gridDim.x) * blockDim.x) {
    const uint32_t key = keys[i];
    if (key < rows && (i == 0 || keys[i - 1] != key)) run_start[key] = int32_t(i);
  }
}

// Zeros the rows no token picked (run_start[v] < 0), kRowsAtOnce rows per step of a block so that
// a thread has several stores in flight; picked rows are left to run_sums_kernel.
constexpr int kRowsAtOnce = 4;

template <class E, int VEC>
__global__ void __launch_bounds__(kThreads)
    zero_unpicked_kernel(const int32_t* run_start, int64_t rows, typename E::T* dtable, int64_t dtable_ld, int64_t D) {
  Chunk<E, VEC> zero;
#pragma unroll
  for (int k = 0; k < VEC; ++k) zero.v.v[k] = E::store(0.0f);
  for (int64_t v0 = int64_t(blockIdx.x) * kRowsAtOnce; v0 < rows; v0 += int64_t(gridDim.x) * kRowsAtOnce) {
    bool unpicked[kRowsAtOnce];
#pragma unroll
    for (int r = 0; r < kRowsAtOnce; ++r) unpicked[r] = v0 + r < rows && run_start[v0 + r] < 0;
    for (int64_t d = int64_t(threadIdx.x) * VEC; d < D; d += int64_t(blockDim.x) * VEC) {
#pragma unroll
      for (int r = 0; r < kRowsAtOnce; ++r) {
        if (unpicked[r]) zero.store(dtable + (v0 + r) * dtable_ld + d);
      }
    }
  }
}

// Block (i, slice): when sorted position i starts a run of equal keys (a picked row), sums the
// run's dout rows over the slice's columns in token order and writes the row of dtable.
template <class E, int VEC>
__global__ void __launch_bounds__(kThreads)
    run_sums_kernel(const uint32_t* keys, const int32_t* tokens, int64_t T, uint32_t rows, const typename E::T* dout,
                    int64_t dout_ld, typename E::T* dtable, int64_t dtable_ld, int64_t D) {
  const int64_t i = blockIdx.x;
  const uint32_t key = keys[i];
  if (key >= rows || (i > 0 && keys[i - 1] == key)) return;
  const int64_t d = (int64_t(blockIdx.y) * blockDim.x + threadIdx.x) * VEC;
  if (d >= D) return;
  float acc[VEC] = {};
  for (int64_t j = i; j < T && keys[j] == key; ++j) {
    Chunk<E, VEC> c;
    c.load(dout + int64_t(tokens[j]) * dout_ld + d);
#pragma unroll
    for (int k = 0; k < VEC; ++k) acc[k] += c.get(k);
  }
  Chunk<E, VEC> c;
#pragma unroll
  for (int k = 0; k < VEC; ++k) c.v.v[k] = E::store(acc[k]);
  c.store(dtable + int64_t(key) * dtable_ld + d);
}

// The scratch of one call: the sort's keys and values in and out, each row's run start, then the
// sort's own.
struct SortBuffers {
  uint32_t *keys_in, *keys_out;
  int32_t *values_in, *values_out, *run_start;
  void* temp;
};

template <class E>
struct EmbeddingBackwardSorted {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    using T = typename E::T;
    const DLTensor *ids = c->tensors[XHAL_EMBEDDING_BACKWARD_IDS], *dout = c->tensors[XHAL_EMBEDDING_BACKWARD_DOUT];
    const DLTensor* dtable = c->tensors[XHAL_EMBEDDING_BACKWARD_DTABLE];
    const int64_t T_ = dout->shape[0], D = dout->shape[1], V = dtable->shape[0];
    const int64_t padding = kernels::op_params<xhal_embedding_op_params>(c).padding_idx;
    auto stream = static_cast<gpuStream_t>(c->stream);
    auto* dst = static_cast<T*>(dtable->data);
    if (V == 0 || D == 0) return XHAL_OK;
    int end_bit = 1;
    while (end_bit < 32 && (uint64_t(1) << end_bit) <= uint64_t(V)) ++end_bit;  // V itself is a key
    size_t temp_bytes = 0;
    if (T_ > 0 && radix_sort_pairs(nullptr, temp_bytes, nullptr, nullptr, nullptr, nullptr, int(T_), end_bit, stream) !=
                      gpuSuccess) {
      return kernel_error(msg, len, XHAL_ERR_DEVICE, "embedding_backward: the sort's scratch size query failed");
    }
    const auto aligned = [](size_t bytes) { return (bytes + 255) / 256 * 256; };
    const size_t pairs = aligned(size_t(T_) * 4 + 4), starts = aligned(size_t(V) * 4);
    void* scratch = nullptr;
    if (const xhal_status refused = c->host->scratch_alloc(c->host->ctx, c->device, 4 * pairs + starts + temp_bytes,
                                                           c->stream, &scratch, msg, len);
        refused != XHAL_OK) {
      return refused;
    }
    char* base = static_cast<char*>(scratch);
    const SortBuffers b{reinterpret_cast<uint32_t*>(base),
                        reinterpret_cast<uint32_t*>(base + pairs),
                        reinterpret_cast<int32_t*>(base + 2 * pairs),
                        reinterpret_cast<int32_t*>(base + 3 * pairs),
                        reinterpret_cast<int32_t*>(base + 4 * pairs),
                        base + 4 * pairs + starts};
    xhal_status s = gpuMemsetAsync(b.run_start, 0xff, size_t(V) * 4, stream) == gpuSuccess  // -1: no token
                        ? XHAL_OK
                        : kernel_error(msg, len, XHAL_ERR_DEVICE, "embedding_backward: clearing the run starts failed");
    if (s == XHAL_OK && T_ > 0) {
      sort_keys_kernel<<<grid_for(T_, 256), 256, 0, stream>>>(ids->data, ids->strides[0], ids->dtype.bits == 64, T_, V,
                                                              padding, b.keys_in, b.values_in);
      s = launch_status(msg, len, "embedding_backward keys");
      if (s == XHAL_OK && radix_sort_pairs(b.temp, temp_bytes, b.keys_in, b.keys_out, b.values_in, b.values_out,
                                           int(T_), end_bit, stream) != gpuSuccess) {
        s = kernel_error(msg, len, XHAL_ERR_DEVICE, "embedding_backward: the sort failed");
      }
      if (s == XHAL_OK) {
        run_starts_kernel<<<grid_for(T_, 256), 256, 0, stream>>>(b.keys_out, T_, uint32_t(V), b.run_start);
        s = launch_status(msg, len, "embedding_backward run starts");
      }
    }
    if (s == XHAL_OK) {
      const bool vec = rows_vectorizable(dout, D) && rows_vectorizable(dtable, D);
      const int per_thread = vec ? Vec<E>::kVec : 1;
      const unsigned slices = unsigned((D + int64_t(kThreads) * per_thread - 1) / (int64_t(kThreads) * per_thread));
      const unsigned zero_grid = grid_for(V, kRowsAtOnce, 8 * int64_t(multiprocessor_count(c->device)));
      auto launch = [&](auto zero_kernel, auto sums_kernel) {
        zero_kernel<<<zero_grid, kThreads, 0, stream>>>(b.run_start, V, dst, dtable->strides[0], D);
        if (T_ > 0) {
          sums_kernel<<<dim3(unsigned(T_), slices), kThreads, 0, stream>>>(
              b.keys_out, b.values_out, T_, uint32_t(V), static_cast<const T*>(dout->data), dout->strides[0], dst,
              dtable->strides[0], D);
        }
      };
      if (vec) {
        launch(zero_unpicked_kernel<E, Vec<E>::kVec>, run_sums_kernel<E, Vec<E>::kVec>);
      } else {
        launch(zero_unpicked_kernel<E, 1>, run_sums_kernel<E, 1>);
      }
      s = launch_status(msg, len, "embedding_backward rows");
    }
    // The allocator is stream-ordered: the buffers are reused only after these kernels.
    c->host->scratch_free(c->host->ctx, c->device, scratch);
    return s;
  }
};

// The sort takes an int count and 32-bit keys; slices of columns a 16-bit grid dimension.
const char* backward_supports(void*, const xhal_op_call* c) {
  const DLTensor *dout = c->tensors[XHAL_EMBEDDING_BACKWARD_DOUT], *dtable = c->tensors[XHAL_EMBEDDING_BACKWARD_DTABLE];
  if (dout->shape[0] > 0x7fffffff) return "more than 2^31 - 1 tokens";
  if (dtable->shape[0] >= 0xffffffffLL) return "a table of 2^32 - 1 rows or more";
  if (dout->shape[1] > int64_t(kThreads) * 65535) return "rows longer than the grid's column slices";
  return nullptr;
}

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<EmbeddingGather>(host, XHAL_GPU_BACKEND ".embedding", XHAL_OP_EMBEDDING, {0, true, nullptr});
  register_float_kernels<EmbeddingBackwardSorted>(host, XHAL_GPU_BACKEND ".embedding_backward_sorted",
                                                  XHAL_OP_EMBEDDING_BACKWARD, {0, true, backward_supports});
}

}  // namespace xhal::gpu

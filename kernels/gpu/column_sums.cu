// Column sums of a matrix [rows, cols]: blocks of kCols columns by chunks of rows. Each thread of
// a block owns one column and a lane of rows (row = lane, lane + kLanes, ...), the lanes are added
// in lane order through shared memory, and each chunk writes an f32 partial row; a second kernel
// adds the chunks' partial rows in chunk order. The chunk count depends on the row count alone, so
// the sums have the same bits run to run. One chunk writes the result directly.
#include "column_sums.hpp"
#include "launch.cuh"

namespace xhal::gpu {
namespace {

constexpr int kCols = 32, kLanes = 8, kThreads = kCols * kLanes;
constexpr int64_t kRowsPerChunk = 256, kMaxChunks = 64;

template <class E>
__global__ void __launch_bounds__(kThreads)
    chunk_sums_kernel(const typename E::T* t, int64_t ld, int64_t rows, int64_t cols, int64_t rows_per_chunk,
                      float* partial, typename E::T* out, int64_t out_stride) {
  __shared__ float lanes[kLanes][kCols];
  const int col = threadIdx.x % kCols, lane = threadIdx.x / kCols;
  const int64_t j = int64_t(blockIdx.x) * kCols + col;
  const int64_t r0 = int64_t(blockIdx.y) * rows_per_chunk;
  const int64_t r1 = r0 + rows_per_chunk < rows ? r0 + rows_per_chunk : rows;
  float sum = 0.0f;
  if (j < cols) {
    for (int64_t r = r0 + lane; r < r1; r += kLanes) sum += E::load(t[r * ld + j]);
  }
  lanes[lane][col] = sum;
  __syncthreads();
  if (lane != 0 || j >= cols) return;
  float total = 0.0f;
#pragma unroll
  for (int l = 0; l < kLanes; ++l) total += lanes[l][col];
  if (partial != nullptr) {
    partial[int64_t(blockIdx.y) * cols + j] = total;
  } else {
    out[j * out_stride] = E::store(total);
  }
}

template <class E>
__global__ void add_chunks_kernel(const float* partial, int64_t chunks, int64_t cols, typename E::T* out,
                                  int64_t out_stride) {
  for (int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; j < cols; j += int64_t(gridDim.x) * blockDim.x) {
    float total = 0.0f;
    for (int64_t c = 0; c < chunks; ++c) total += partial[c * cols + j];
    out[j * out_stride] = E::store(total);
  }
}

template <class E>
xhal_status launch(const xhal_op_call* c, const DLTensor* t, const DLTensor* out, char* msg, size_t len) {
  using T = typename E::T;
  const int64_t rows = t->shape[0], cols = t->shape[1];
  if (cols == 0) return XHAL_OK;
  const int64_t wanted = (rows + kRowsPerChunk - 1) / kRowsPerChunk;
  const int64_t chunks = wanted <= 1 ? 1 : wanted < kMaxChunks ? wanted : kMaxChunks;
  const int64_t rows_per_chunk = chunks == 1 ? rows : (rows + chunks - 1) / chunks;
  const int64_t col_blocks = (cols + kCols - 1) / kCols;
  if (col_blocks > 0x7fffffff) {
    return kernel_error(msg, len, XHAL_ERR_UNSUPPORTED, "column sums: %lld columns", (long long)cols);
  }
  auto stream = static_cast<gpuStream_t>(c->stream);
  const auto* data = static_cast<const T*>(t->data);
  auto* dst = static_cast<T*>(out->data);
  const int64_t ld = rows > 1 ? t->strides[0] : 0;
  if (chunks == 1) {
    chunk_sums_kernel<E><<<dim3(unsigned(col_blocks), 1), kThreads, 0, stream>>>(data, ld, rows, cols, rows_per_chunk,
                                                                                 nullptr, dst, out->strides[0]);
    return launch_status(msg, len, "column sums");
  }
  void* scratch = nullptr;
  if (const xhal_status s = c->host->scratch_alloc(c->host->ctx, c->device, size_t(chunks * cols) * sizeof(float),
                                                   c->stream, &scratch, msg, len);
      s != XHAL_OK) {
    return s;
  }
  auto* partial = static_cast<float*>(scratch);
  chunk_sums_kernel<E><<<dim3(unsigned(col_blocks), unsigned(chunks)), kThreads, 0, stream>>>(
      data, ld, rows, cols, rows_per_chunk, partial, dst, out->strides[0]);
  xhal_status s = launch_status(msg, len, "column sums");
  if (s == XHAL_OK) {
    add_chunks_kernel<E><<<grid_for(cols, 256), 256, 0, stream>>>(partial, chunks, cols, dst, out->strides[0]);
    s = launch_status(msg, len, "column sums (chunks)");
  }
  // The allocator is stream-ordered: the partials are reused only after these kernels.
  c->host->scratch_free(c->host->ctx, c->device, scratch);
  return s;
}

}  // namespace

xhal_status column_sums(const xhal_op_call* c, const DLTensor* t, const DLTensor* out, char* msg, size_t len) {
  switch (c->dtype) {
    case XHAL_DTYPE_F32: return launch<F32>(c, t, out, msg, len);
    case XHAL_DTYPE_F16: return launch<F16>(c, t, out, msg, len);
    case XHAL_DTYPE_BF16: return launch<BF16>(c, t, out, msg, len);
    default: return kernel_error(msg, len, XHAL_ERR_UNSUPPORTED, "column sums: not a float dtype");
  }
}

}  // namespace xhal::gpu

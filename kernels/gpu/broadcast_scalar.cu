// broadcast_scalar (broadcast_scalar.hpp): a thread an element.
#include "broadcast_scalar.hpp"
#include "launch.cuh"

namespace xhal::gpu {
namespace {

__global__ void broadcast_kernel(const float* src, float* dst, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = *src;
}

}  // namespace

xhal_status broadcast_scalar(const float* src, float* dst, int64_t n, void* stream, char* msg, size_t len) {
  if (n <= 0) return XHAL_OK;
  constexpr int kThreads = 256;
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks > int64_t(INT32_MAX)) return kernel_error(msg, len, XHAL_ERR_UNSUPPORTED, "broadcast_scalar: n too large");
  broadcast_kernel<<<unsigned(blocks), kThreads, 0, static_cast<gpuStream_t>(stream)>>>(src, dst, n);
  return launch_status(msg, len, "broadcast_scalar");
}

}  // namespace xhal::gpu

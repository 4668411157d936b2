// Helpers shared by the GPU kernels' host code: row layouts passed to kernels by value, alignment
// checks for 16-byte vector access, and turning launch errors into statuses.
#pragma once

#include <cstdint>
#include <cstdio>

#include <dlpack/dlpack.h>

#include "element.cuh"
#include "kernel_registration.hpp"
#include "vendor.cuh"

namespace xhal::gpu {

using kernels::kernel_error;

// A tensor viewed as rows of its last dimension: row r starts at offset(r) elements. Leading dims
// that step through memory as one (contiguous rows, size-1 dims) are merged, so that most tensors
// have one and a row's offset is a multiplication: the 64-bit division of the general case costs
// about a hundred instructions, more than a thread's share of a short row's arithmetic.
struct RowLayout {
  int lead = 0;  // number of leading dims after merging
  int64_t size[7] = {};  // leading dims, outermost first
  int64_t stride[7] = {};
  int64_t rows = 0, cols = 0;

  __host__ __device__ int64_t offset(int64_t r) const {
    if (lead == 1) return r * stride[0];
    int64_t off = 0;
    for (int d = lead - 1; d >= 0; --d) {
      off += (r % size[d]) * stride[d];
      r /= size[d];
    }
    return off;
  }
};

inline RowLayout row_layout(const DLTensor* t) {
  RowLayout l;
  l.cols = t->shape[t->ndim - 1];
  l.rows = 1;
  for (int d = 0; d + 1 < t->ndim; ++d) {
    l.rows *= t->shape[d];
    if (t->shape[d] == 1) continue;  // any stride: only index 0
    if (l.lead > 0 && l.stride[l.lead - 1] == t->strides[d] * t->shape[d]) {
      l.size[l.lead - 1] *= t->shape[d];  // dim d continues the previous one
      l.stride[l.lead - 1] = t->strides[d];
      continue;
    }
    l.size[l.lead] = t->shape[d];
    l.stride[l.lead] = t->strides[d];
    ++l.lead;
  }
  return l;
}

// True when every row of `t` (and `t`'s data) can be read with aligned 16-byte vectors.
inline bool rows_vectorizable(const DLTensor* t, int64_t cols) {
  const int elt = t->dtype.bits / 8;
  if (reinterpret_cast<uintptr_t>(t->data) % 16 != 0 || (cols * elt) % 16 != 0) return false;
  for (int d = 0; d + 1 < t->ndim; ++d) {
    if (t->shape[d] > 1 && (t->strides[d] * elt) % 16 != 0) return false;
  }
  return true;
}

// Row tasks [0, tasks) to groups of `per_row` threads (a power of two up to a warp), a warp's groups
// on consecutive tasks; every thread of a warp makes the same trips, so a group may shuffle.
template <class F>
__device__ inline void for_row_tasks(int64_t tasks, int per_row, F&& f) {
  const int lane = threadIdx.x % kWarpSize, rows_per_warp = kWarpSize / per_row;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / kWarpSize);
  for (int64_t base = (int64_t(blockIdx.x) * (blockDim.x / kWarpSize) + threadIdx.x / kWarpSize) * rows_per_warp;
       base < tasks; base += warps * rows_per_warp) {
    const int64_t task = base + lane / per_row;
    f(task, task < tasks, lane % per_row);
  }
}

// The status of the last launch, with the kernel's name in the message.
inline xhal_status launch_status(char* msg, size_t len, const char* kernel) {
  const gpuError_t err = gpuGetLastError();
  if (err == gpuSuccess) return XHAL_OK;
  return kernel_error(msg, len, XHAL_ERR_DEVICE, "%s: launch failed: %s", kernel, gpuGetErrorString(err));
}

// The multiprocessor count of `device` (kernels size one-wave grids by it), at least 1.
inline int multiprocessor_count(int device) {
  const int count = device_attribute<gpuDevAttrMultiProcessorCount>(device);
  return count > 0 ? count : 1;
}

// Lets `kernel` launch with up to `bytes` of dynamic shared memory: above the default 48 KiB a
// kernel must opt in. The one place every kernel does so.
template <class Kernel>
void allow_shared_bytes(Kernel kernel, size_t bytes) {
  (void)gpuFuncSetAttribute(reinterpret_cast<const void*>(kernel), gpuFuncAttributeMaxDynamicSharedMemorySize,
                            int(bytes));
}

// How many blocks of `kernel` (`threads` each, `shared` bytes of dynamic shared memory) the whole
// device holds at once: the grid of a kernel whose blocks loop over the work, so that none waits
// for a second wave. At least one per multiprocessor.
template <class Kernel>
int64_t resident_blocks(Kernel kernel, int threads, size_t shared, int device) {
  int per_sm = 0;
  if (gpuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, shared) != gpuSuccess || per_sm < 1) {
    (void)gpuGetLastError();  // a query that failed leaves no error for the launch's status
    per_sm = 1;
  }
  return int64_t(per_sm) * multiprocessor_count(device);
}

// A block of about `want` threads: whole warps, at least one, at most `max_threads`.
inline int block_threads(int64_t want, int max_threads) {
  const int64_t warps = (want + kWarpSize - 1) / kWarpSize;
  const int64_t threads = (warps < 1 ? 1 : warps) * kWarpSize;
  return int(threads < max_threads ? threads : max_threads);
}

// A grid of at most `max_blocks` blocks for `work` items of `per_block` each (kernels loop).
inline unsigned grid_for(int64_t work, int64_t per_block, int64_t max_blocks = 65535 * 8) {
  int64_t blocks = (work + per_block - 1) / per_block;
  if (blocks < 1) blocks = 1;
  return static_cast<unsigned>(blocks < max_blocks ? blocks : max_blocks);
}

}  // namespace xhal::gpu

namespace xhal::gpu {

// Runs Run on the call's device (the calling thread's current device is switched when needed),
// exceptions kept from crossing the plugin's boundary.
template <kernels::RunFn Run>
xhal_status on_call_device(void* ctx, const xhal_op_call* c, char* msg, size_t len) {
  int current = -1;
  if (gpuGetDevice(&current) != gpuSuccess || current != c->device) {
    if (gpuSetDevice(c->device) != gpuSuccess) {
      return kernel_error(msg, len, XHAL_ERR_DEVICE, "cannot make device %d current", c->device);
    }
  }
  return kernels::guarded<Run>(ctx, c, msg, len);
}

// Registers Kernel<E>::run for E in F32, F16, BF16, each run on the call's device.
template <template <class> class Kernel>
void register_float_kernels(const xhal_host_api* host, const char* name, xhal_op op,
                            kernels::KernelTraits traits = {}) {
  kernels::register_kernel(host, name, op, XHAL_DTYPE_F32, &on_call_device<&Kernel<F32>::run>,
                           accuracy_for(XHAL_DTYPE_F32), traits);
  kernels::register_kernel(host, name, op, XHAL_DTYPE_F16, &on_call_device<&Kernel<F16>::run>,
                           accuracy_for(XHAL_DTYPE_F16), traits);
  kernels::register_kernel(host, name, op, XHAL_DTYPE_BF16, &on_call_device<&Kernel<BF16>::run>,
                           accuracy_for(XHAL_DTYPE_BF16), traits);
}

// Registers Kernel<E>::run for the 16-bit types only (tensor-core kernels).
template <template <class> class Kernel>
void register_half_kernels(const xhal_host_api* host, const char* name, xhal_op op, kernels::KernelTraits traits) {
  kernels::register_kernel(host, name, op, XHAL_DTYPE_F16, &on_call_device<&Kernel<F16>::run>,
                           accuracy_for(XHAL_DTYPE_F16), traits);
  kernels::register_kernel(host, name, op, XHAL_DTYPE_BF16, &on_call_device<&Kernel<BF16>::run>,
                           accuracy_for(XHAL_DTYPE_BF16), traits);
}

}  // namespace xhal::gpu

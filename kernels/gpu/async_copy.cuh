// 16-byte copies from global to shared memory that run asynchronously where the hardware can
// (cp.async on NVIDIA sm_80+), and as plain loads and stores elsewhere (HIP), behind one interface.
#pragma once

#include "element.cuh"

#if !defined(__HIPCC__)
#include "mma_sm80.cuh"  // cp.async
#endif

namespace xhal::gpu {

template <class E>
__device__ inline void copy16(typename E::T* dst, const typename E::T* src, bool valid) {
#if !defined(__HIPCC__)
  sm80::cp_async_16(dst, src, valid);
#else
  *reinterpret_cast<vec16_t*>(dst) = valid ? *reinterpret_cast<const vec16_t*>(src) : vec16_t{0, 0, 0, 0};
#endif
}
__device__ inline void copy_commit() {
#if !defined(__HIPCC__)
  sm80::cp_async_commit();
#endif
}
template <int N>
__device__ inline void copy_wait() {
#if !defined(__HIPCC__)
  sm80::cp_async_wait<N>();
#endif
}

}  // namespace xhal::gpu

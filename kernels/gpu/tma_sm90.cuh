// NVIDIA Hopper asynchronous copies and their synchronisation (sm_90a): mbarriers in shared
// memory, TMA tensor loads (cp.async.bulk.tensor) that complete on an mbarrier, and per-warpgroup
// register reallocation (setmaxnreg) for warp-specialised kernels. Device code only where XHAL_WGMMA_DEVICE (wgmma_sm90.cuh) is set.
#pragma once

#if !defined(__HIPCC__)

#include <cuda.h>  // CUtensorMap (the type only; the encoder is reached through the runtime)

#include <cstdint>

#include "mma_sm80.cuh"
#include "wgmma_sm90.cuh"

namespace xhal::gpu::sm90 {

// A 64-bit mbarrier in shared memory: `count` arrivals (plus any transaction bytes announced with
// expect_tx) complete its current phase; waiters wait for the phase of a given parity to complete.
__device__ inline void mbarrier_init(uint64_t* bar, unsigned count) {
#if XHAL_WGMMA_DEVICE
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(sm80::smem_address(bar)), "r"(count));
#endif
}
// Makes initialised mbarriers visible to the async proxy (TMA) and the other threads.
__device__ inline void mbarrier_init_fence() {
#if XHAL_WGMMA_DEVICE
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
// One arrival that also announces `bytes` more transaction bytes for the current phase.
__device__ inline void mbarrier_arrive_expect(uint64_t* bar, unsigned bytes) {
#if XHAL_WGMMA_DEVICE
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(sm80::smem_address(bar)), "r"(bytes)
               : "memory");
#endif
}
// Announces `bytes` more transaction bytes for the current phase, without arriving.
__device__ inline void mbarrier_expect_tx(uint64_t* bar, unsigned bytes) {
#if XHAL_WGMMA_DEVICE
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(sm80::smem_address(bar)), "r"(bytes)
               : "memory");
#endif
}
__device__ inline void mbarrier_arrive(uint64_t* bar) {
#if XHAL_WGMMA_DEVICE
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(sm80::smem_address(bar)) : "memory");
#endif
}
__device__ inline void mbarrier_wait(uint64_t* bar, unsigned parity) {
#if XHAL_WGMMA_DEVICE
  unsigned done = 0;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(sm80::smem_address(bar)), "r"(parity)
                 : "memory");
  } while (!done);
#endif
}

// The box of `map` at coordinates (c0..c3) into shared memory at dst; its bytes count as
// transactions on `bar`.
__device__ inline void tma_load_4d(void* dst, const CUtensorMap* map, int c0, int c1, int c2, int c3, uint64_t* bar) {
#if XHAL_WGMMA_DEVICE
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, "
      "%5}], [%6];\n" ::"r"(sm80::smem_address(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(sm80::smem_address(bar))
      : "memory");
#endif
}

// Registers per thread of the calling warpgroup (all its threads execute it): producers give
// theirs back, consumers take them.
template <int kRegisters>
__device__ inline void registers_decrease() {
#if XHAL_WGMMA_DEVICE
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
#endif
}
template <int kRegisters>
__device__ inline void registers_increase() {
#if XHAL_WGMMA_DEVICE
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
#endif
}

}  // namespace xhal::gpu::sm90

#endif

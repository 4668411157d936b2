// NVIDIA Hopper warpgroup MMA (wgmma, sm_90a): a warpgroup of 4 warps multiplies a 64-row A tile
// (from shared memory or registers) by an N-column B tile in shared memory, asynchronously, into
// f32 accumulators. Accumulators use the m16n8 layout of mma.sync per warp: warp w of the group
// holds rows 16w..16w+15, as float d[N / 8][4] (mma_sm80.cuh); an A operand in registers has the
// mma.sync A layout per warp as well (PTX ISA, "Register Fragments", wgmma .m64nNk16).
//
// Shared-memory operands use the 128-byte swizzle (what TMA writes with SWIZZLE_128B): a tile is
// stored as 64-column blocks of rows of 128 bytes, and 16-byte chunk c of row r sits at chunk
// c ^ (r % 8), each block 1024-byte aligned. The same bytes serve as a K-major operand (rows = M
// or N, e.g. Q and K) and as an MN-major one (rows = K, e.g. V, read transposed).
#pragma once

#if !defined(__HIPCC__)

#include <cstdint>

#include "element.cuh"
#include "mma_sm80.cuh"

// wgmma exists only in code built for sm_90a; elsewhere the kernels that use it compile empty and
// are never selected (XHAL_CUDA_SM90A tells the host side).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define XHAL_WGMMA_DEVICE 1
#else
#define XHAL_WGMMA_DEVICE 0
#endif

namespace xhal::gpu::sm90 {

// Shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"): start address, leading
// and stride byte offsets (16-byte units) and the 128-byte swizzle mode. K-major operands: stride
// = 1024 (from one 8-row group to the next), leading unused. MN-major: stride = 1024 (from one
// 8-row group along K to the next), leading = from one 64-column block to the next.
__device__ inline uint64_t descriptor(const void* p, uint32_t leading_bytes, uint32_t stride_bytes) {
  const uint32_t addr = sm80::smem_address(p);
  return uint64_t((addr & 0x3FFFFu) >> 4) | uint64_t((leading_bytes >> 4) & 0x3FFFu) << 16 |
         uint64_t((stride_bytes >> 4) & 0x3FFFu) << 32 | uint64_t(1) << 62;
}

// A descriptor moved on by `bytes` (a multiple of 16) within its tile: the address field counts
// 16-byte units and cannot carry into the offsets, shared memory addresses being below 2^18. A
// kernel computes its tiles' descriptors once and each wgmma's as one of these plus a constant.
__device__ inline uint64_t advance(uint64_t desc, uint32_t bytes) { return desc + (bytes >> 4); }

// Orders this thread's earlier register and shared-memory accesses before the wgmma that follow.
__device__ inline void fence() {
#if XHAL_WGMMA_DEVICE
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ inline void commit() {
#if XHAL_WGMMA_DEVICE
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int N>
__device__ inline void wait() {
#if XHAL_WGMMA_DEVICE
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}
// Keeps the compiler from moving accesses of accumulator registers across wgmma issue and wait.
template <int kTiles>
__device__ inline void pin(float (&d)[kTiles][4]) {
#pragma unroll
  for (int t = 0; t < kTiles; ++t) {
    asm volatile("" : "+f"(d[t][0]), "+f"(d[t][1]), "+f"(d[t][2]), "+f"(d[t][3])::"memory");
  }
}

#define XHAL_WG_TILE(d, t) "+f"(d[t][0]), "+f"(d[t][1]), "+f"(d[t][2]), "+f"(d[t][3])
#define XHAL_WG_TILES8(d, t)                                                                                          \
  XHAL_WG_TILE(d, t), XHAL_WG_TILE(d, t + 1), XHAL_WG_TILE(d, t + 2), XHAL_WG_TILE(d, t + 3), XHAL_WG_TILE(d, t + 4), \
      XHAL_WG_TILE(d, t + 5), XHAL_WG_TILE(d, t + 6), XHAL_WG_TILE(d, t + 7)
#define XHAL_WG_REGS32                                                                          \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
  "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define XHAL_WG_REGS64                                                                          \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
  "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "  \
  "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "  \
  "%56, %57, %58, %59, %60, %61, %62, %63}"

// The wgmma instructions below for the input type AB ("bf16" or "f16"): with A and B in shared
// memory (SS) or A in registers (RS), N = 64 or 128 accumulator columns.
#define XHAL_WG_SS64(AB)                                                                                               \
  asm volatile(                                                                                                        \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                                                                     \
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." AB "." AB " " XHAL_WG_REGS32 ", %32, %33, p, 1, 1, %35, %36;\n}\n" \
      : XHAL_WG_TILES8(d, kFirst)                                                                                      \
      : "l"(a), "l"(b), "r"(int(accumulate)), "n"(kTransA), "n"(kTransB))
#define XHAL_WG_SS128(AB)                                                         \
  asm volatile(                                                                   \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"                                \
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." AB "." AB " " XHAL_WG_REGS64 \
      ", %64, %65, p, 1, 1, %67, %68;\n}\n"                                       \
      : XHAL_WG_TILES8(d, kFirst), XHAL_WG_TILES8(d, kFirst + 8)                  \
      : "l"(a), "l"(b), "r"(int(accumulate)), "n"(kTransA), "n"(kTransB))
#define XHAL_WG_RS64(AB)                                                         \
  asm volatile(                                                                  \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"                               \
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." AB "." AB " " XHAL_WG_REGS32 \
      ", {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"                            \
      : XHAL_WG_TILES8(d, kFirst)                                                \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1))
#define XHAL_WG_RS128(AB)                                                         \
  asm volatile(                                                                   \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"                                \
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." AB "." AB " " XHAL_WG_REGS64 \
      ", {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"                             \
      : XHAL_WG_TILES8(d, kFirst), XHAL_WG_TILES8(d, kFirst + 8)                  \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1))

// d (tiles [kFirst, kFirst + N / 8)) = A B (+ d when accumulate), A 64x16 and B Nx16 in shared
// memory, N = 64 or 128. K-major by default; kTransA / kTransB = 1 read A / B MN-major (A stored
// as rows of K along M, B as rows of K along N: the transposes of the K-major forms).
template <class E, int N, int kFirst = 0, int kTransA = 0, int kTransB = 0, int kTiles>
__device__ inline void mma_ss(float (&d)[kTiles][4], uint64_t a, uint64_t b, bool accumulate) {
  static_assert(N == 64 || N == 128, "wgmma shapes used here");
  static_assert(kFirst + N / 8 <= kTiles, "accumulator tiles");
#if XHAL_WGMMA_DEVICE
  constexpr bool kBf16 = E::kDType == XHAL_DTYPE_BF16;
  if constexpr (N == 64 && kBf16) {
    XHAL_WG_SS64("bf16");
  } else if constexpr (N == 64) {
    XHAL_WG_SS64("f16");
  } else if constexpr (kBf16) {
    XHAL_WG_SS128("bf16");
  } else {
    XHAL_WG_SS128("f16");
  }
#endif
}

// d (tiles [kFirst, kFirst + N / 8)) += A B, A 64x16 in registers, B 16xN MN-major in shared memory,
// N = 64 or 128 (one instruction for N = 128: A is read from the registers once).
template <class E, int N, int kFirst = 0, int kTiles>
__device__ inline void mma_rs(float (&d)[kTiles][4], const uint32_t (&a)[4], uint64_t b) {
  static_assert(N == 64 || N == 128, "wgmma shapes used here");
  static_assert(kFirst + N / 8 <= kTiles, "accumulator tiles");
#if XHAL_WGMMA_DEVICE
  constexpr bool kBf16 = E::kDType == XHAL_DTYPE_BF16;
  if constexpr (N == 64 && kBf16) {
    XHAL_WG_RS64("bf16");
  } else if constexpr (N == 64) {
    XHAL_WG_RS64("f16");
  } else if constexpr (kBf16) {
    XHAL_WG_RS128("bf16");
  } else {
    XHAL_WG_RS128("f16");
  }
#endif
}

#undef XHAL_WG_SS64
#undef XHAL_WG_SS128
#undef XHAL_WG_RS64
#undef XHAL_WG_RS128
#undef XHAL_WG_TILE
#undef XHAL_WG_TILES8
#undef XHAL_WG_REGS32
#undef XHAL_WG_REGS64

}  // namespace xhal::gpu::sm90

#endif

// NVIDIA tensor-core building blocks (sm_80 and later): mma.sync m16n8k16 with f32 accumulators,
// ldmatrix from shared memory, and cp.async copies from global memory. Fragment layouts follow the
// PTX ISA ("Matrix Fragments for mma.m16n8k16"): in a warp, lane = 4 * group + tig; a thread holds
//   A (16x16): a0 (row group, cols 2*tig..+1), a1 (row group+8, same), a2/a3 (same rows, cols +8)
//   B (16x8):  b0 (k = 2*tig..+1, n = group), b1 (k + 8)
//   C (16x8):  c0,c1 (row group, cols 2*tig..+1), c2,c3 (row group+8, same cols)
#pragma once

#if !defined(__HIPCC__)

#include <cstdint>

#include "element.cuh"

namespace xhal::gpu::sm80 {

template <class E>
__device__ inline void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (E::kDType == XHAL_DTYPE_BF16) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

__device__ inline uint32_t smem_address(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

// Four 8x8 matrices of 16-bit elements; lane l gives the row address of matrix l / 8, row l % 8.
__device__ inline void ldmatrix_x4(uint32_t (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(row)));
}

__device__ inline void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_address(row)));
}

// An 8x8 matrix of 16-bit elements, one register a thread in the mma layout (lane l: row l / 4,
// cols 2 * (l % 4)..+1), transposed: what C fragments need to become an operand along the other side.
__device__ inline uint32_t movmatrix_trans(uint32_t x) {
  uint32_t y;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(y) : "r"(x));
  return y;
}

// 16 bytes global -> shared, bypassing L1; when !valid the destination is zero-filled.
__device__ inline void cp_async_16(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_address(dst)), "l"(src),
               "r"(valid ? 16 : 0));
}
__device__ inline void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ inline void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// 2^x with the special-function unit (about 2 ulp; -inf gives 0), what the softmax needs.
__device__ inline float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Two f32 values as one register of two 16-bit values (round to nearest even).
template <class E>
__device__ inline uint32_t pack2(float lo, float hi) {
  if constexpr (E::kDType == XHAL_DTYPE_BF16) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
  } else {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
  }
}

}  // namespace xhal::gpu::sm80

#endif

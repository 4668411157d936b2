// Intel AMX for the CPU kernels: the tile configuration they use (eight tiles of 16 rows x 64
// bytes: a 16 x 16 f32 accumulator, or 16 rows of 32 bf16) and the instructions, written through
// the assembler so that no file needs AMX compile flags (the compiler's own intrinsics are
// assembler statements too, but without a memory clobber, so it could move the kernels' ordinary
// loads and stores across them). Only code that checked amx_tiles_usable() may run them.
#pragma once

#include <cstdint>
#include <string>

#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "cpu_features.hpp"

namespace xhal::cpu {

// The CPU has AMX-BF16 (and XHAL_CPU_DISABLE does not name it) and Linux lets this process use the
// tile registers: their state is large, so a process must ask for it once (arch_prctl).
inline bool amx_tiles_usable() {
#if defined(__x86_64__) && defined(__linux__)
  static const bool permitted = [] {
    constexpr int kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return cpu_has_amx_bf16() && syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return permitted && cpu_has_amx_bf16();
#else
  return false;
#endif
}

// The AMX kernels' condition: tiles usable, and AVX512_BF16 for rounding their f32 results to bf16.
inline bool amx_bf16_kernels_usable() { return amx_tiles_usable() && cpu_has_bf16_convert(); }

// xhal-info's words for whether the AMX kernels run: "AMX tiles: bf16 attention", or why not.
inline std::string amx_summary() {
#if defined(XHAL_HAVE_HIGHWAY) && defined(__x86_64__)
  return amx_bf16_kernels_usable() ? "AMX tiles: bf16 attention"
                                   : "AMX tiles: unused (no AMX-BF16 or AVX512_BF16, or XHAL_CPU_DISABLE names one)";
#else
  return "AMX tiles: unused (built without Highway)";
#endif
}

#if defined(__x86_64__)
// ldtilecfg's 64-byte operand (palette 1).
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Eight tiles of 16 rows x 64 bytes, until amx_release(). Per thread.
inline void amx_configure_16x64() {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) cfg.colsb[t] = 64, cfg.rows[t] = 16;
  asm volatile("ldtilecfg %0" ::"m"(cfg));
}

inline void amx_release() { asm volatile("tilerelease" ::: "memory"); }

// Tile t from / to rows `stride` bytes apart at p; tile c += a · b (bf16 pairs, f32 sums).
#define XHAL_TILE_LOAD(t, p, stride) \
  asm volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"(p), "r"(static_cast<int64_t>(stride)) : "memory")
#define XHAL_TILE_STORE(t, p, stride) \
  asm volatile("tilestored %%tmm" #t ", (%0,%1,1)" ::"r"(p), "r"(static_cast<int64_t>(stride)) : "memory")
#define XHAL_TILE_ZERO(t) asm volatile("tilezero %%tmm" #t ::)
#define XHAL_TILE_DPBF16PS(c, a, b) asm volatile("tdpbf16ps %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)
#endif

}  // namespace xhal::cpu

// The CPU features the kernels may use and the SIMD code they run. The cpu backend detects the
// features (and applies XHAL_CPU_DISABLE) when it loads and sets them here before it registers any
// kernel; the kernels only read them.
#pragma once

#include <string>

namespace xhal::cpu {

struct CpuFeatures {
  bool bf16_convert = false;  // the CPU rounds f32 to bf16 itself (AVX512_BF16)
  bool amx_bf16 = false;  // the CPU multiplies bf16 tiles (AMX-BF16)
  bool int8_dot = false;  // the CPU sums int8 products into int32 in one instruction (AVX512_VNNI, AVX-VNNI)
  // bf16 dot products (vdpbf16ps) at the rate of 512-bit f32 FMAs, so twice the multiply-adds: AMD
  // CPUs with AVX512_BF16 (Zen 4 measured); Intel ones run two FMA units, where sgemm is as fast.
  bool bf16_dot_fast = false;
};

// What set_cpu_features set (nothing before the plugin's init).
const CpuFeatures& cpu_features();
void set_cpu_features(const CpuFeatures& features);

inline bool cpu_has_bf16_convert() { return cpu_features().bf16_convert; }
inline bool cpu_has_amx_bf16() { return cpu_features().amx_bf16; }
inline bool cpu_has_int8_dot() { return cpu_features().int8_dot; }
inline bool cpu_has_fast_bf16_dot() { return cpu_features().bf16_dot_fast; }

// "Highway 1.0.3: AVX3 (compiled: AVX3 AVX2 SCALAR); bf16 rounding: AVX512_BF16", or why there
// are no SIMD kernels.
std::string simd_summary();

}  // namespace xhal::cpu

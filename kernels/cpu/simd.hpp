// Which SIMD code the CPU kernels run: the Highway target picked for this CPU at run time (once,
// when the plugin loads), or the portable kernels when the plugin was built without Highway.
#pragma once

#include <string>

namespace xhal::cpu {

// "Highway 1.0.3: AVX3 (compiled: AVX3 AVX2 SCALAR); bf16 rounding: AVX512_BF16", or why there
// are no SIMD kernels.
std::string simd_summary();

// Whether the CPU rounds f32 to bf16 itself (AVX512_BF16) and the kernels may use it.
bool cpu_has_bf16_convert();

// Whether the CPU multiplies bf16 tiles (AMX-BF16) and the kernels may use it: not with amx or
// avx512 disabled.
bool cpu_has_amx_bf16();

// XHAL_CPU_DISABLE: comma-separated instruction sets the kernels must not use (kCpuDisableNames),
// to test or compare the code paths of other CPUs on this one. Applied once, before the first
// kernel runs; returns the names it did not know ("" when none).
std::string apply_cpu_disable(const char* list);
inline constexpr const char* kCpuDisableNames = "avx512, avx2, avx512_bf16, amx";

}  // namespace xhal::cpu

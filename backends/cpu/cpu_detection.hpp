// What the cpu backend finds out about the host CPU: its name and widest SIMD level for the device
// properties, and the features the kernels may use, less those XHAL_CPU_DISABLE names.
#pragma once

#include <string>

namespace xhal::cpu {

std::string cpu_model_name();
// "avx512", "avx2", "sse2", "neon" or "scalar", with the f32 lane count of that level.
const char* simd_arch(int* lanes);

// XHAL_CPU_DISABLE's names: instruction sets the kernels must not use, to test or compare the code
// paths of other CPUs on this one.
inline constexpr const char* kCpuDisableNames = "avx512, avx2, avx512_bf16, amx, vnni";
// Detects the features, drops those `disable_list` names (and Highway's targets for avx512 and
// avx2), and hands the result to the kernels (set_cpu_features). Called once, before any kernel is
// registered; returns the names it did not know ("" when none).
std::string configure_cpu_features(const char* disable_list);

}  // namespace xhal::cpu

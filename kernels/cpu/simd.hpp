// Which SIMD code the CPU kernels run: the Highway target picked for this CPU at run time (once,
// when the plugin loads), or the portable kernels when the plugin was built without Highway.
#pragma once

#include <string>

namespace xhal::cpu {

// "Highway 1.0.3: AVX3 (compiled: AVX3 AVX2 SCALAR); bf16 rounding: AVX512_BF16", or why there
// are no SIMD kernels.
std::string simd_summary();

// Whether the CPU rounds f32 to bf16 itself (AVX512_BF16); read once.
bool cpu_has_bf16_convert();

}  // namespace xhal::cpu

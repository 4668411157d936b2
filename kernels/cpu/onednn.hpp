// oneDNN behind the CPU's bf16 linear on CPUs with AMX or AMD's AVX512_BF16
// (kernels/cpu/linear_onednn.cpp) and its int8 linear on CPUs with VNNI
// (kernels/cpu/linear_int8_onednn.cpp).
#pragma once

#include <string>

namespace xhal::cpu {

// "oneDNN 2.6.3 (bf16 linear on AVX512_BF16; int8 linear on VNNI)", or why there is none.
#if defined(XHAL_HAVE_ONEDNN)
std::string onednn_summary();
// Whether oneDNN's int8 matmul runs VNNI here (and XHAL_CPU_DISABLE leaves it): its sums are exact.
bool onednn_runs_vnni();
#else
inline std::string onednn_summary() { return "oneDNN: none (built without it)"; }
#endif

}  // namespace xhal::cpu

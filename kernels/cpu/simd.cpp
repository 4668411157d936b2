#include "simd.hpp"

#if defined(XHAL_HAVE_HIGHWAY)
#include <hwy/highway.h>
#include <hwy/targets.h>
#endif

namespace xhal::cpu {

std::string simd_summary() {
#if defined(XHAL_HAVE_HIGHWAY)
  // Targets are bits, better ones lower: the lowest bit the CPU supports is what dispatch picks.
  const int64_t usable = hwy::SupportedTargets() & HWY_TARGETS;
  std::string text = "Highway " + std::to_string(HWY_MAJOR) + "." + std::to_string(HWY_MINOR) + "." +
                     std::to_string(HWY_PATCH) + ": " + hwy::TargetName(usable & -usable) + " (compiled:";
  for (int64_t targets = HWY_TARGETS; targets != 0; targets &= targets - 1) {
    text += std::string(" ") + hwy::TargetName(targets & -targets);
  }
  return text + "); bf16 rounding: " + (cpu_has_bf16_convert() ? "AVX512_BF16" : "integer arithmetic");
#else
  return "portable kernels only (built without Highway)";
#endif
}

bool cpu_has_bf16_convert() {
#if defined(__x86_64__)
  static const bool has = __builtin_cpu_supports("avx512bf16");
  return has;
#else
  return false;
#endif
}

}  // namespace xhal::cpu

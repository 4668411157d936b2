#include "kernels/cpu/cpu_features.hpp"

#if defined(XHAL_HAVE_HIGHWAY)
#include <hwy/highway.h>
#include <hwy/targets.h>
#endif

namespace xhal::cpu {
namespace {
CpuFeatures g_features;  // written once by the plugin's init, before any kernel runs
}  // namespace

const CpuFeatures& cpu_features() { return g_features; }
void set_cpu_features(const CpuFeatures& features) { g_features = features; }

std::string simd_summary() {
#if defined(XHAL_HAVE_HIGHWAY)
  // Targets are bits, better ones lower: the lowest bit the CPU supports is what dispatch picks.
  const int64_t usable = hwy::SupportedTargets() & HWY_TARGETS;
  std::string text = "Highway " + std::to_string(HWY_MAJOR) + "." + std::to_string(HWY_MINOR) + "." +
                     std::to_string(HWY_PATCH) + ": " + hwy::TargetName(usable & -usable) + " (compiled:";
  for (int64_t targets = HWY_TARGETS; targets != 0; targets &= targets - 1) {
    text += std::string(" ") + hwy::TargetName(targets & -targets);
  }
  const bool avx512 = (usable & -usable & (HWY_AVX3 | HWY_AVX3_DL)) != 0;  // only there it is used
  return text + "); bf16 rounding: " + (avx512 && cpu_has_bf16_convert() ? "AVX512_BF16" : "integer arithmetic");
#else
  return "portable kernels only (built without Highway)";
#endif
}

}  // namespace xhal::cpu

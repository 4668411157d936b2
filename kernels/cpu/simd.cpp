#include "simd.hpp"

#include <cctype>
#include <cstdlib>
#include <sstream>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

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
  const bool avx512 = (usable & -usable & (HWY_AVX3 | HWY_AVX3_DL)) != 0;  // only there it is used
  return text + "); bf16 rounding: " + (avx512 && cpu_has_bf16_convert() ? "AVX512_BF16" : "integer arithmetic");
#else
  return "portable kernels only (built without Highway)";
#endif
}

namespace {
bool g_bf16_disabled = false;
bool g_amx_disabled = false;
}  // namespace

std::string apply_cpu_disable(const char* list) {
  std::string unknown;
  std::stringstream names(list != nullptr ? list : "");
  for (std::string item; std::getline(names, item, ',');) {
    // The core's rule for list variables: items trimmed and lower-cased, empty ones dropped.
    const size_t first = item.find_first_not_of(" \t\n\r\f\v"), last = item.find_last_not_of(" \t\n\r\f\v");
    if (first == std::string::npos) continue;
    std::string name = item.substr(first, last - first + 1);
    for (char& ch : name) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    if (name == "avx512_bf16") {
      g_bf16_disabled = true;
    } else if (name == "amx") {
      g_amx_disabled = true;
    } else if (name == "avx512") {
      g_amx_disabled = true;  // the AMX kernels use AVX-512 too
#if defined(XHAL_HAVE_HIGHWAY)
      hwy::DisableTargets(HWY_AVX3 | HWY_AVX3_DL);
    } else if (name == "avx2") {
      hwy::DisableTargets(HWY_AVX2);
#else
    } else if (name == "avx2") {  // nothing to disable without Highway
#endif
    } else {
      unknown += (unknown.empty() ? "" : ",") + name;
    }
  }
  return unknown;
}

bool cpu_has_bf16_convert() {
#if defined(__x86_64__)
  static const bool has = __builtin_cpu_supports("avx512bf16");
  return has && !g_bf16_disabled;
#else
  return false;
#endif
}

bool cpu_has_amx_bf16() {
#if defined(__x86_64__)
  // CPUID leaf 7 rather than __builtin_cpu_supports, whose "amx-bf16" name Clang 14 lacks.
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) != 0 && (edx & (1u << 22)) != 0;
  }();
  return has && !g_amx_disabled;
#else
  return false;
#endif
}

}  // namespace xhal::cpu

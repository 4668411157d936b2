#include "cpu_detection.hpp"

#include <cctype>
#include <fstream>
#include <sstream>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#if defined(XHAL_HAVE_HIGHWAY)
#include <hwy/highway.h>
#include <hwy/targets.h>
#endif

#include "kernels/cpu/cpu_features.hpp"

namespace xhal::cpu {
namespace {

bool detect_bf16_convert() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx512bf16");
#else
  return false;
#endif
}

bool detect_amx_bf16() {
#if defined(__x86_64__)
  // CPUID leaf 7 rather than __builtin_cpu_supports, whose "amx-bf16" name Clang 14 lacks.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) != 0 && (edx & (1u << 22)) != 0;
#else
  return false;
#endif
}

bool detect_int8_dot() {
#if defined(__x86_64__)
  // CPUID leaf 7: AVX512_VNNI is ECX bit 11 of subleaf 0, AVX-VNNI EAX bit 4 of subleaf 1.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) != 0 && (ecx & (1u << 11)) != 0) return true;
  return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) != 0 && (eax & (1u << 4)) != 0;
#else
  return false;
#endif
}

// An AMD CPU (CPUID leaf 0's vendor string "AuthenticAMD").
bool detect_amd() {
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx) == 0) return false;
  return ebx == 0x68747541u && edx == 0x69746e65u && ecx == 0x444d4163u;  // "Auth" "enti" "cAMD"
#else
  return false;
#endif
}

}  // namespace

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "cpu";
}

const char* simd_arch(int* lanes) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) return *lanes = 16, "avx512";
  if (__builtin_cpu_supports("avx2")) return *lanes = 8, "avx2";
  return *lanes = 4, "sse2";
#elif defined(__aarch64__)
  return *lanes = 4, "neon";
#else
  return *lanes = 1, "scalar";
#endif
}

std::string configure_cpu_features(const char* disable_list) {
  CpuFeatures features{detect_bf16_convert(), detect_amx_bf16(), detect_int8_dot(), false};
  features.bf16_dot_fast = features.bf16_convert && detect_amd();
  std::string unknown;
  std::stringstream names(disable_list != nullptr ? disable_list : "");
  for (std::string item; std::getline(names, item, ',');) {
    // The core's rule for list variables: items trimmed and lower-cased, empty ones dropped.
    const size_t first = item.find_first_not_of(" \t\n\r\f\v"), last = item.find_last_not_of(" \t\n\r\f\v");
    if (first == std::string::npos) continue;
    std::string name = item.substr(first, last - first + 1);
    for (char& ch : name) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    if (name == "avx512_bf16") {
      features.bf16_convert = features.bf16_dot_fast = false;
    } else if (name == "amx") {
      features.amx_bf16 = false;
    } else if (name == "vnni") {
      features.int8_dot = false;
    } else if (name == "avx512") {
      features.amx_bf16 = false;  // the AMX kernels use AVX-512 too, and so does oneDNN's bf16 matmul
      features.bf16_dot_fast = false;
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
  set_cpu_features(features);
  return unknown;
}

}  // namespace xhal::cpu

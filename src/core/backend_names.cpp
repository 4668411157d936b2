#include "core/backend_names.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

#include <fmt/format.h>

namespace xhal::backend_names {
namespace {

struct Alias {
  std::string_view name;
  DeviceType type;
};

constexpr std::array kAliases{
    Alias{"cpu", DeviceType::cpu},     Alias{"cuda", DeviceType::cuda},
    Alias{"nvidia", DeviceType::cuda}, Alias{"hip", DeviceType::hip},
    Alias{"amd", DeviceType::hip},     Alias{"rocm", DeviceType::hip},
    Alias{"hygon", DeviceType::hip},   Alias{"dcu", DeviceType::hip},
    Alias{"ze", DeviceType::ze},       Alias{"intel", DeviceType::ze},
    Alias{"level_zero", DeviceType::ze},
};

constexpr std::array<std::string_view, 6> kWithoutPlugin{"ascend", "npu", "mlu", "cambricon",
                                                          "musa", "metal"};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

}  // namespace

std::optional<DeviceType> lookup(std::string_view name) {
  const std::string key = lower(name);
  for (const Alias& a : kAliases) {
    if (a.name == key) return a.type;
  }
  return std::nullopt;
}

bool is_known_without_plugin(std::string_view name) {
  const std::string key = lower(name);
  return std::find(kWithoutPlugin.begin(), kWithoutPlugin.end(), key) != kWithoutPlugin.end();
}

bool is_backend(std::string_view name) {
  for (int t = 0; t < kNumDeviceTypes; ++t) {
    if (device_type_name(static_cast<DeviceType>(t)) == name) return true;
  }
  return false;
}

std::string backend_list() {
  std::string out;
  for (int t = 0; t < kNumDeviceTypes; ++t) {
    out += fmt::format("{}{}", out.empty() ? "" : ", ", device_type_name(static_cast<DeviceType>(t)));
  }
  return out;
}

std::string known_list() {
  std::string out = "auto";
  for (int t = 0; t < kNumDeviceTypes; ++t) {
    const auto type = static_cast<DeviceType>(t);
    std::string aliases;
    for (const Alias& a : kAliases) {
      if (a.type == type && a.name != device_type_name(type)) {
        aliases += aliases.empty() ? "" : ", ";
        aliases += a.name;
      }
    }
    out += fmt::format(", {}", device_type_name(type));
    if (!aliases.empty()) out += fmt::format(" ({})", aliases);
  }
  return out;
}

}  // namespace xhal::backend_names

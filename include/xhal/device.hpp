// Device identity: a backend type and an index, written "cuda:1", "hip:0", "cpu".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace xhal {

// A backend's code. cpu, cuda, hip and ze have fixed codes; a plugin of any other name (an "npu",
// a vendor's "toyaccel") gets the next code when it loads: device_type_name() and Device::parse()
// know it from then on. Codes are below kMaxBackends.
enum class DeviceType : uint8_t { cpu = 0, cuda = 1, hip = 2, ze = 3 };
inline constexpr int kMaxBackends = 16;

// "cpu", "cuda", "npu", ...; "unknown" for a code no backend holds.
std::string_view device_type_name(DeviceType type);

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;

  static Device cpu() { return {DeviceType::cpu, 0}; }
  // Parses "cpu", "cuda", "cuda:1", the BACKEND_TYPE aliases ("nvidia:0", "dcu:1") and the name of
  // any backend whose plugin is installed ("toyaccel:0"). Throws Error(invalid_argument) naming the
  // accepted forms; Error(backend_unavailable) for a known accelerator with no plugin installed.
  static Device parse(std::string_view text);
  std::string str() const;
  friend bool operator==(const Device& a, const Device& b) { return a.type == b.type && a.index == b.index; }
  friend bool operator!=(const Device& a, const Device& b) { return !(a == b); }
};

}  // namespace xhal

// Device identity: a backend type and an index, written "cuda:1", "hip:0", "cpu".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace xhal {

enum class DeviceType : uint8_t { cpu = 0, cuda = 1, hip = 2, ze = 3 };
inline constexpr int kNumDeviceTypes = 4;

std::string_view device_type_name(DeviceType type);

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;

  static Device cpu() { return {DeviceType::cpu, 0}; }
  // Parses "cpu", "cuda", "cuda:1", and the BACKEND_TYPE aliases ("nvidia:0", "dcu:1").
  // Throws Error(invalid_argument) naming the accepted forms.
  static Device parse(std::string_view text);
  std::string str() const;
  friend bool operator==(const Device&, const Device&) = default;
};

}  // namespace xhal

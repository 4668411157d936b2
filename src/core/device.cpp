#include "xhal/device.hpp"

#include <charconv>

#include "core/backend_names.hpp"
#include "core/runtime.hpp"
#include "core/text_format.hpp"
#include "xhal/error.hpp"

namespace xhal {

std::string_view device_type_name(DeviceType type) {
  const std::string_view name = backend_names::name_of(type);
  return name.empty() ? "unknown" : name;
}

Device Device::parse(std::string_view text) {
  std::string_view name = text;
  int index = 0;
  if (auto colon = text.find(':'); colon != std::string_view::npos) {
    name = text.substr(0, colon);
    std::string_view digits = text.substr(colon + 1);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty() || index < 0) {
      throw Error(Errc::invalid_argument,
                  format_text("device '{}': the index after ':' must be a non-negative integer", text));
    }
  }
  auto type = backend_names::lookup(name);
  if (!type && backend_names::is_valid_name(backend_names::canonical(name))) {
    Runtime::get();  // a backend beyond the fixed four has its name once its plugin has loaded
    type = backend_names::lookup(name);
  }
  if (!type) {
    throw Error(Errc::invalid_argument,
                format_text("device '{}': unknown device type '{}'; installed backends: {}; known names: {} "
                            "(each with an optional ':<index>')",
                            text, name, Runtime::get().installed_list(), backend_names::known_list()));
  }
  return {*type, index};
}

std::string Device::str() const {
  if (type == DeviceType::cpu && index == 0) return "cpu";
  return format_text("{}:{}", device_type_name(type), index);
}

}  // namespace xhal

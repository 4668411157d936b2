// Backend names: the alias table for BACKEND_TYPE and device strings, and the open set of backends
// of this process. cpu, cuda, hip and ze hold DeviceType codes 0-3; a plugin of any other
// well-formed name is given the next free code when it loads. Thread-safe; a code, once given,
// keeps its name for the life of the process.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "xhal/device.hpp"

namespace xhal::backend_names {

// [a-z][a-z0-9_]{0,31}: the <name> of libxhal_<name>.so and of devices "<name>:<index>".
bool is_valid_name(std::string_view name);
// The backend an alias stands for ("nvidia" -> "cuda", "ascend" -> "npu"), or the name itself.
// Case-insensitive; the result is lower case.
std::string canonical(std::string_view name);
// The code of a backend name or alias, once a plugin of that name registered it (cpu, cuda, hip
// and ze always have theirs).
std::optional<DeviceType> lookup(std::string_view name);
// Gives `name` (canonical, valid) a code, or returns the one it has; nullopt when all
// kMaxBackends codes are taken.
std::optional<DeviceType> register_name(std::string_view name);
// The name of `type`'s code ("" when no backend holds it).
std::string_view name_of(DeviceType type);
// "auto, cpu, cuda (nvidia), hip (amd, rocm, hygon, dcu), ..., npu (ascend), ...": every name the
// alias table and this process know.
std::string known_list();

}  // namespace xhal::backend_names

// The alias table for backend names (BACKEND_TYPE and device strings), and the names of accelerator
// families this build has no plugin for.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "xhal/device.hpp"

namespace xhal::backend_names {

// "cuda", "nvidia" -> cuda; "amd", "rocm", "hygon", "dcu" -> hip; ... Case-insensitive.
std::optional<DeviceType> lookup(std::string_view name);
// True for names of real accelerator families xhal has no plugin for yet ("ascend", "mlu", ...).
bool is_known_without_plugin(std::string_view name);
// True for the name of a backend this build knows ("cpu", "cuda", "hip", "ze"; exactly, not an
// alias): the plugin files libxhal_<name>.so that the search path opens.
bool is_backend(std::string_view name);
// "cpu, cuda, hip, ze"
std::string backend_list();
// "auto, cpu, cuda (nvidia), hip (amd, rocm, hygon, dcu), ze (intel, level_zero)"
std::string known_list();

}  // namespace xhal::backend_names

// The environment variables xhal reads, in one table. Read only through env_value(); each is listed
// in docs/configuration.md.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace xhal::env {

enum class Var {
  backend_type,
  plugin_path,
  log_level,
  allocator,
  memory_limit,
  strict,
  force_reference,
  disable_kernels,
  rank,
  world_size,
  store,
  check,
  check_action,
  trace,
  fault_alloc,
};

struct VarInfo {
  Var var;
  std::string_view name;
  std::string_view default_value;
  std::string_view meaning;
};

std::span<const VarInfo> table();
const VarInfo& info(Var var);
// The variable's value, or nothing when unset or empty.
std::optional<std::string> value(Var var);
bool flag(Var var);  // "1", "true", "on", "yes" (any case)
// Parses "1048576", "512K", "64M", "2G" (powers of 1024). Throws Error(invalid_argument) naming `var`.
size_t parse_bytes(Var var, std::string_view text);
// The variable as an integer, or nothing when unset or empty. Throws Error(invalid_argument) naming
// `var` when it is not one.
std::optional<int64_t> integer(Var var);
[[noreturn]] void throw_unknown_choice(Var var, std::string_view text, std::string_view names);
// The value among `choices` the variable names, `fallback` when unset or empty. Throws
// Error(invalid_argument) naming `var` and the accepted names otherwise.
template <class T>
T choice(Var var, std::initializer_list<std::pair<std::string_view, T>> choices, T fallback) {
  const auto text = value(var);
  if (!text) return fallback;
  std::string names;
  for (const auto& [name, v] : choices) {
    if (*text == name) return v;
    names += (names.empty() ? "" : ", ") + std::string(name);
  }
  throw_unknown_choice(var, *text, names);
}

}  // namespace xhal::env

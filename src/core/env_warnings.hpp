// Warning about a bad configuration value and carrying on: what the readers of env.hpp do for the
// variables whose table row says a bad value is warned about, once per variable, through the log.
#pragma once

#include <exception>
#include <string>

#include "core/env.hpp"

namespace xhal::env {

// Logs `message` (a bad value and what was done instead) as a warning, once per variable.
void warn_bad_value(Var var, const std::string& message);

// reader(var), or `fallback` after warn_bad_value when the value breaks the rule.
template <class Reader, class T>
auto or_warn(Var var, Reader reader, T fallback) -> decltype(reader(var)) {
  try {
    return reader(var);
  } catch (const std::exception& e) {
    warn_bad_value(var, e.what());
    return fallback;
  }
}

}  // namespace xhal::env

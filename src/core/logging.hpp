// xhal's logger (spdlog, named "xhal", level from XHAL_LOG_LEVEL; default warn, to stderr). spdlog
// stays inside logging.cpp: its header-only build is compiled once, not in every file that logs.
#pragma once

#include <string_view>

#include "core/text_format.hpp"

namespace xhal {

enum class LogLevel { debug, info, warn, error };

bool log_enabled(LogLevel level);
void log_text(LogLevel level, std::string_view message);

// Formats only when the level is on.
template <class... Args>
void log(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  if (log_enabled(level)) log_text(level, format_text(format, std::forward<Args>(args)...));
}

}  // namespace xhal

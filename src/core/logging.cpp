#include "core/logging.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "core/env.hpp"

namespace xhal {
namespace {

spdlog::logger& logger() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = std::make_shared<spdlog::logger>("xhal", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    l->set_pattern("[xhal %l] %v");
    l->set_level(spdlog::level::warn);
    // Not env::or_warn, which logs through this logger: a bad level is warned about here, at the
    // default level, so that it and every other configuration error stay visible.
    try {
      if (const auto level = env::choice_text(env::Var::log_level)) {
        l->set_level(spdlog::level::from_str(*level));
      }
    } catch (const std::exception& e) {
      l->warn("{}; {}", e.what(), env::info(env::Var::log_level).on_bad);
    }
    return l;
  }();
  return *logger;
}

spdlog::level::level_enum spdlog_level(LogLevel level) {
  switch (level) {
    case LogLevel::debug: return spdlog::level::debug;
    case LogLevel::info: return spdlog::level::info;
    case LogLevel::warn: return spdlog::level::warn;
    case LogLevel::error: break;
  }
  return spdlog::level::err;
}

}  // namespace

bool log_enabled(LogLevel level) { return logger().should_log(spdlog_level(level)); }

void log_text(LogLevel level, std::string_view message) { logger().log(spdlog_level(level), "{}", message); }

}  // namespace xhal

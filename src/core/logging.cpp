#include "core/logging.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

#include "core/env.hpp"

namespace xhal {

spdlog::logger& log() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = std::make_shared<spdlog::logger>(
        "xhal", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    l->set_pattern("[xhal %l] %v");
    auto level = env::value(env::Var::log_level);
    l->set_level(level ? spdlog::level::from_str(*level) : spdlog::level::warn);
    return l;
  }();
  return *logger;
}

}  // namespace xhal

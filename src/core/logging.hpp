// xhal's logger (spdlog, named "xhal", level from XHAL_LOG_LEVEL; default warn, to stderr).
#pragma once

#include <spdlog/spdlog.h>

namespace xhal {

spdlog::logger& log();

}  // namespace xhal

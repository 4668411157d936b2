#include "core/text_format.hpp"

#include <fmt/format.h>

namespace xhal {

std::string vformat_text(fmt::string_view format, fmt::format_args args) { return fmt::vformat(format, args); }

}  // namespace xhal

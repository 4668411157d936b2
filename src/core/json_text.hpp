// A string as a JSON string literal (quotes, backslashes and control characters escaped): for the
// JSON that xhal writes itself (the trace, xhal-info --json).
#pragma once

#include <string>
#include <string_view>

#include "core/text_format.hpp"

namespace xhal {

inline std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20)
          out += format_text("\\u{:04x}", int(c));
        else
          out += c;
    }
  }
  return out + "\"";
}

}  // namespace xhal

// Text formatting for xhal's messages: fmt's format strings, checked at compile time, formatted by
// one function compiled once (text_format.cpp). fmt is header-only here (kept local to libxhal, see
// xhal.map); a file that called fmt::format directly would compile fmt's formatting engine again,
// several seconds a file and ten under the sanitizers.
#pragma once

#include <fmt/core.h>

#include <string>
#include <string_view>
#include <utility>

namespace xhal {

std::string vformat_text(fmt::string_view format, fmt::format_args args);

template <class... Args>
std::string format_text(fmt::format_string<Args...> format, Args&&... args) {
  return vformat_text(format, fmt::make_format_args(args...));
}

// The elements of a range, each formatted as by "{}", with sep between them.
template <class Range>
std::string join_text(const Range& range, std::string_view sep) {
  std::string out;
  bool first = true;
  for (const auto& element : range) {
    if (!first) out += sep;
    first = false;
    out += format_text("{}", element);
  }
  return out;
}

}  // namespace xhal

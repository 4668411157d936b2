// A view's shape as error messages print it: "[2, 7, 64]".
#pragma once

#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "xhal/tensor_view.hpp"

namespace xhal {

inline std::string shape_str(const TensorView& t) { return fmt::format("[{}]", fmt::join(t.shape(), ", ")); }

}  // namespace xhal

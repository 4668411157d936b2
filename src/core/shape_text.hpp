// A view's shape as error messages print it: "[2, 7, 64]".
#pragma once

#include <string>

#include "core/text_format.hpp"
#include "xhal/tensor_view.hpp"

namespace xhal {

inline std::string shape_str(const TensorView& t) { return format_text("[{}]", join_text(t.shape(), ", ")); }

}  // namespace xhal

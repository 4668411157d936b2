#include "core/env_warnings.hpp"

#include <array>
#include <atomic>

#include "core/logging.hpp"

namespace xhal::env {

void warn_bad_value(Var var, const std::string& message) {
  static std::array<std::atomic<bool>, 64> warned{};  // one flag per row of the table
  const size_t row = size_t(&info(var) - table().data());
  if (row < warned.size() && warned[row].exchange(true)) return;
  log(LogLevel::warn, "{}; {}", message, info(var).on_bad);
}

}  // namespace xhal::env

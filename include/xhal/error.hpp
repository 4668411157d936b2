// Errors thrown by xhal. Every failure a caller can cause or observe is an xhal::Error with a code;
// nothing in xhal aborts on user input.
#pragma once

#include <stdexcept>
#include <string>

#include "xhal/status.h"

namespace xhal {

enum class Errc {
  invalid_argument = XHAL_ERR_INVALID_ARGUMENT,
  unsupported = XHAL_ERR_UNSUPPORTED,
  out_of_memory = XHAL_ERR_OUT_OF_MEMORY,
  backend_unavailable = XHAL_ERR_BACKEND_UNAVAILABLE,
  device_error = XHAL_ERR_DEVICE,
  comm_error = XHAL_ERR_COMM,
  timeout = XHAL_ERR_TIMEOUT,
  internal = XHAL_ERR_INTERNAL,
};

const char* errc_name(Errc code);

class Error : public std::runtime_error {
 public:
  Error(Errc code, const std::string& message) : std::runtime_error(message), code_(code) {}
  Errc code() const noexcept { return code_; }

 private:
  Errc code_;
};

class OutOfMemoryError : public Error {
 public:
  explicit OutOfMemoryError(const std::string& message) : Error(Errc::out_of_memory, message) {}
};

// Throws the Error matching a non-OK plugin status (OutOfMemoryError for out_of_memory).
[[noreturn]] void throw_status(xhal_status status, const std::string& message);

}  // namespace xhal

#include "xhal/error.hpp"

namespace xhal {

const char* errc_name(Errc code) {
  switch (code) {
    case Errc::invalid_argument: return "invalid_argument";
    case Errc::unsupported: return "unsupported";
    case Errc::out_of_memory: return "out_of_memory";
    case Errc::backend_unavailable: return "backend_unavailable";
    case Errc::device_error: return "device_error";
    case Errc::comm_error: return "comm_error";
    case Errc::timeout: return "timeout";
    case Errc::internal: return "internal";
  }
  return "unknown";
}

void throw_status(xhal_status status, const std::string& message) {
  if (status == XHAL_ERR_OUT_OF_MEMORY) throw OutOfMemoryError(message);
  if (status < XHAL_ERR_INVALID_ARGUMENT || status > XHAL_ERR_INTERNAL) {
    throw Error(Errc::internal, message);
  }
  throw Error(static_cast<Errc>(status), message);
}

}  // namespace xhal

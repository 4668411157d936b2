#include "core/instrumentation.hpp"

namespace xhal::instrumentation {

std::atomic<uint32_t> g_flags{kUnread};

void set(Flag flag, bool on) {
  if (on) {
    g_flags.fetch_or(flag);
  } else {
    g_flags.fetch_and(~uint32_t(flag));
  }
}

}  // namespace xhal::instrumentation

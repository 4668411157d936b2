// xhal-info built without nlohmann-json (Debian: nlohmann-json3-dev): --trace-summary says so.
#include <cstdio>

#include "trace_summary.hpp"

int print_trace_summary(const std::string&, int) {
  std::fprintf(stderr,
               "xhal-info --trace-summary: this xhal-info was built without nlohmann-json "
               "(Debian: nlohmann-json3-dev); the trace is JSON any viewer reads (ui.perfetto.dev)\n");
  return 1;
}

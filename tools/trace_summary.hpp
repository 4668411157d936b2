// xhal-info --trace-summary: the top ops of an XHAL_TRACE file by time.
#pragma once

#include <string>

// Prints ops (by op and kernel) sorted by total time; returns a process exit code (0 = printed).
int print_trace_summary(const std::string& path, int top);

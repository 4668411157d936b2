#include "trace_summary.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace {

struct Row {
  std::string op, kernel, device;
  int64_t calls = 0;
  double host_us = 0, device_us = 0, bytes = 0;
  bool has_device_time = false;
};

// The trace's events. The closing bracket is optional (a process that died mid-run leaves none),
// as in the Chrome trace format's array form; xhal writes one event per line, so a line cut short
// by the death is dropped.
nlohmann::json read_events(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("cannot open '{}'", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error&) {
    std::string whole = text.substr(0, text.rfind('\n'));  // still bad: the parser's error says where
    while (!whole.empty() && (std::isspace(static_cast<unsigned char>(whole.back())) || whole.back() == ',')) {
      whole.pop_back();
    }
    return nlohmann::json::parse(whole + "]");
  }
}

}  // namespace

int print_trace_summary(const std::string& path, int top) {
  nlohmann::json events;
  try {
    events = read_events(path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "xhal-info --trace-summary: %s: %s\n", path.c_str(), e.what());
    return 1;
  }
  if (events.is_object() && events.contains("traceEvents")) events = events["traceEvents"];
  std::map<std::tuple<std::string, std::string, std::string>, Row> rows;
  double total_us = 0;
  for (const auto& e : events) {
    if (e.value("ph", "") != "X" || e.value("cat", "") != "op") continue;
    const auto& args = e.contains("args") ? e["args"] : nlohmann::json::object();
    const std::string op = e.value("name", "?"), kernel = args.value("kernel", "?"), device = args.value("device", "?");
    Row& r = rows[{op, kernel, device}];
    r.op = op, r.kernel = kernel, r.device = device;
    ++r.calls;
    r.host_us += e.value("dur", 0.0);
    r.bytes += args.value("bytes", 0.0);
    if (args.contains("device_time_us")) r.has_device_time = true, r.device_us += args.value("device_time_us", 0.0);
    total_us += e.value("dur", 0.0);
  }
  std::vector<Row> sorted;
  for (auto& [key, row] : rows) sorted.push_back(row);
  std::sort(sorted.begin(), sorted.end(), [](const Row& a, const Row& b) { return a.host_us > b.host_us; });
  if (top > 0 && sorted.size() > size_t(top)) sorted.resize(size_t(top));
  int64_t calls = 0;
  for (const auto& [key, row] : rows) calls += row.calls;
  fmt::print("{}: {} op calls, {:.3f} ms of host time in ops\n", path, calls, total_us / 1e3);
  fmt::print("{:<20} {:<30} {:<8} {:>7} {:>11} {:>10} {:>6} {:>9} {:>11}\n", "op", "kernel", "device", "calls",
             "host ms", "mean us", "share", "GB/s", "device ms");
  for (const Row& r : sorted) {
    fmt::print("{:<20} {:<30} {:<8} {:>7} {:>11.3f} {:>10.1f} {:>5.1f}% {:>9.2f} {:>11}\n", r.op, r.kernel, r.device,
               r.calls, r.host_us / 1e3, r.host_us / double(r.calls), total_us > 0 ? 100.0 * r.host_us / total_us : 0.0,
               r.host_us > 0 ? r.bytes / (r.host_us * 1e3) : 0.0,
               r.has_device_time ? fmt::format("{:.3f}", r.device_us / 1e3) : std::string("-"));
  }
  return 0;
}

// xhal-info: what this process sees — plugins (loaded or why not), devices with properties and
// memory, the default device BACKEND_TYPE selects, and every registered kernel. `--json` prints the
// same as one JSON object. Exits 2 when BACKEND_TYPE names no usable backend (after printing the
// rest), so scripts fail fast. `--trace-summary FILE [--top N]` prints the top ops of an XHAL_TRACE
// file by time instead; `--ops` the op table (each op, its tensors, its parameter struct).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/json_text.hpp"
#include "trace_summary.hpp"
#include "xhal/op_table.h"
#include "xhal/xhal.h"
#include "xhal/xhal.hpp"

namespace {

using xhal::json_string;

struct Report {
  std::vector<xhal::BackendInfo> backends;
  struct DeviceRow {
    xhal::Device device;
    xhal::DeviceProperties props;
    xhal::MemoryStatus memory;
  };
  std::vector<DeviceRow> devices;
  std::vector<xhal::registry::KernelInfo> kernels;
  std::string default_device, default_reason, default_error;
};

Report gather() {
  auto& manager = xhal::DeviceManager::instance();
  Report r;
  r.backends = manager.backends();
  for (const auto& d : manager.devices()) {
    r.devices.push_back({d, manager.properties(d), manager.memory_status(d)});
  }
  r.kernels = xhal::registry::list_kernels();
  try {
    r.default_device = manager.default_device().str();
    r.default_reason = manager.default_device_reason();
  } catch (const xhal::Error& e) {
    r.default_error = e.what();
  }
  return r;
}

std::string gib(uint64_t bytes) { return fmt::format("{:.1f} GiB", double(bytes) / (1ull << 30)); }

void print_text(const Report& r) {
  fmt::print("Backends:\n");
  for (const auto& b : r.backends) {
    fmt::print("  {:<6} {:<10} {} device(s)  {}\n", b.name, b.loaded ? "loaded" : "not loaded", b.device_count, b.path);
    if (!b.version.empty()) fmt::print("         version: {}\n", b.version);
    if (!b.reason.empty()) fmt::print("         reason: {}\n", b.reason);
  }
  fmt::print("Devices:\n");
  for (const auto& d : r.devices) {
    fmt::print(
        "  {:<7} {} | arch {} | {} compute units | warp {} | memory {} total, {} free | "
        "xhal allocated {} B, reserved {} B\n",
        d.device.str(), d.props.name, d.props.arch, d.props.compute_units, d.props.warp_size, gib(d.props.total_memory),
        gib(d.memory.free), d.memory.allocated, d.memory.reserved);
  }
  if (r.default_error.empty()) {
    fmt::print("Default device: {} ({})\n", r.default_device, r.default_reason);
  } else {
    fmt::print("Default device: none: {}\n", r.default_error);
  }
  fmt::print("Kernels ({}):\n", r.kernels.size());
  for (const auto& k : r.kernels) {
    fmt::print("  {:<19} {:<5} {:<5} {:<26} priority {:>3}{}  rtol {:g} atol {:g}\n", xhal::op_name(k.op),
               xhal::device_type_name(k.backend), xhal::dtype_name(k.dtype), k.name, k.priority,
               k.is_reference ? " reference" : "", k.rtol, k.atol);
  }
}

void print_json(const Report& r) {
  std::vector<std::string> backends, devices, kernels;
  for (const auto& b : r.backends) {
    backends.push_back(
        fmt::format("{{\"name\":{},\"loaded\":{},\"reason\":{},\"path\":{},\"version\":{},\"device_count\":{}}}",
                    json_string(b.name), b.loaded, json_string(b.reason), json_string(b.path), json_string(b.version),
                    b.device_count));
  }
  for (const auto& d : r.devices) {
    devices.push_back(fmt::format(
        "{{\"device\":{},\"name\":{},\"arch\":{},\"total_memory\":{},\"compute_units\":{},"
        "\"warp_size\":{},\"memory\":{{\"free\":{},\"total\":{},\"allocated\":{},\"reserved\":{},"
        "\"peak_allocated\":{},\"num_allocs\":{},\"num_ooms\":{}}}}}",
        json_string(d.device.str()), json_string(d.props.name), json_string(d.props.arch), d.props.total_memory,
        d.props.compute_units, d.props.warp_size, d.memory.free, d.memory.total, d.memory.allocated, d.memory.reserved,
        d.memory.peak_allocated, d.memory.num_allocs, d.memory.num_ooms));
  }
  for (const auto& k : r.kernels) {
    kernels.push_back(fmt::format(
        "{{\"op\":{},\"backend\":{},\"dtype\":{},\"name\":{},\"priority\":{},\"reference\":{},"
        "\"rtol\":{},\"atol\":{}}}",
        json_string(xhal::op_name(k.op)), json_string(xhal::device_type_name(k.backend)),
        json_string(xhal::dtype_name(k.dtype)), json_string(k.name), k.priority, k.is_reference, k.rtol, k.atol));
  }
  fmt::print(
      "{{\"backends\":[{}],\"devices\":[{}],\"default_device\":{},\"default_reason\":{},"
      "\"default_error\":{},\"kernels\":[{}]}}\n",
      fmt::join(backends, ","), fmt::join(devices, ","),
      r.default_error.empty() ? json_string(r.default_device) : "null", json_string(r.default_reason),
      json_string(r.default_error), fmt::join(kernels, ","));
}

}  // namespace

// One line per op of the op table: "rms_norm(x in, weight in, out out) xhal_norm_op_params".
int print_ops() {
  struct Row {
    const char* op;
    const char* params;
    std::string tensors;
  };
#define XHAL_INFO_OP_ROW(NAME, name, params) Row{#name, #params, ""},
  std::vector<Row> rows{XHAL_OPS(XHAL_INFO_OP_ROW)};
#undef XHAL_INFO_OP_ROW
  static constexpr const char* kRoles[] = {"in", "out", "inout"};
#define XHAL_INFO_TENSOR_ROW(OP, NAME, name, slot, role, optional)                                              \
  rows[XHAL_OP_##OP].tensors += fmt::format("{}{} {}{}", rows[XHAL_OP_##OP].tensors.empty() ? "" : ", ", #name, \
                                            kRoles[role], (optional) ? " optional" : "");
  XHAL_OP_TENSORS(XHAL_INFO_TENSOR_ROW)
#undef XHAL_INFO_TENSOR_ROW
  for (const Row& r : rows) std::printf("%s(%s) %s\n", r.op, r.tensors.c_str(), r.params);
  return 0;
}

int main(int argc, char** argv) {
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (std::strcmp(argv[i], "--ops") == 0) {
      return print_ops();
    } else if (std::strcmp(argv[i], "--version") == 0) {
      std::printf("xhal %s (headers %s), plugin ABI %d\n", xhal_version(), XHAL_VERSION_STRING,
                  XHAL_PLUGIN_ABI_VERSION);
      return 0;
    } else if (std::strcmp(argv[i], "--trace-summary") == 0 && i + 1 < argc) {
      const int top = i + 3 < argc && std::strcmp(argv[i + 2], "--top") == 0 ? std::atoi(argv[i + 3]) : 0;
      return print_trace_summary(argv[i + 1], top);
    } else {
      std::fprintf(stderr, "usage: xhal-info [--json] | --ops | --version | --trace-summary FILE [--top N]\n");
      return std::strcmp(argv[i], "--help") == 0 ? 0 : 1;
    }
  }
  try {
    const Report report = gather();
    json ? print_json(report) : print_text(report);
    if (!report.default_error.empty()) {
      std::fprintf(stderr, "xhal-info: %s\n", report.default_error.c_str());
      return 2;
    }
  } catch (const xhal::Error& e) {
    std::fprintf(stderr, "xhal-info: %s\n", e.what());
    return 2;
  }
  return 0;
}

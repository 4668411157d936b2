#include "core/env.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdlib>

#include <fmt/format.h>

#include "xhal/error.hpp"

namespace xhal::env {
namespace {

constexpr std::array kTable{
    VarInfo{Var::backend_type, "BACKEND_TYPE", "auto",
            "default device type: auto, cpu, cuda, hip, ze or an alias (nvidia, amd, rocm, hygon, "
            "dcu, intel, level_zero)"},
    VarInfo{Var::plugin_path, "XHAL_PLUGIN_PATH", "",
            "colon-separated directories searched first for libxhal_<backend>.so plugins"},
    VarInfo{Var::log_level, "XHAL_LOG_LEVEL", "warn",
            "log level: trace, debug, info, warn, error, off"},
    VarInfo{Var::allocator, "XHAL_ALLOCATOR", "caching",
            "caching (default) or direct: every allocation goes to the driver (for sanitizers)"},
    VarInfo{Var::memory_limit, "XHAL_MEMORY_LIMIT", "",
            "cap on the bytes each device's allocator reserves, e.g. 512M or 2G; beyond it an "
            "allocation fails as out of memory"},
    VarInfo{Var::strict, "XHAL_STRICT", "0",
            "1: a call that a higher-priority kernel refuses is an error instead of falling back"},
    VarInfo{Var::force_reference, "XHAL_FORCE_REFERENCE", "",
            "comma-separated op names that always use their backend's reference kernel"},
    VarInfo{Var::disable_kernels, "XHAL_DISABLE_KERNELS", "",
            "comma-separated kernel names (as xhal-info lists them) never to pick; the next "
            "kernel that supports the call runs instead"},
    VarInfo{Var::rank, "RANK", "",
            "this process's rank for xhal::comm communicators (checked against MPI's under mpirun)"},
    VarInfo{Var::world_size, "WORLD_SIZE", "",
            "the number of ranks for xhal::comm communicators (checked against MPI's under mpirun)"},
    VarInfo{Var::store, "XHAL_STORE", "",
            "file:<path>: how rank 0's bootstrap id reaches the other ranks of an NCCL/RCCL "
            "communicator outside mpirun (a path all ranks see, fresh for each job)"},
    VarInfo{Var::check, "XHAL_CHECK", "off",
            "cpu: every op also runs on the CPU reference kernel and its outputs are compared "
            "(the shadow check; slow, for finding a diverging op); off"},
    VarInfo{Var::check_action, "XHAL_CHECK_ACTION", "log",
            "what a divergence found by XHAL_CHECK does: log (a warning) or throw (xhal::Error, "
            "code internal)"},
    VarInfo{Var::trace, "XHAL_TRACE", "",
            "a file to write a Chrome/Perfetto trace of every op call to (JSON; xhal-info "
            "--trace-summary reads it)"},
    VarInfo{Var::fault_alloc, "XHAL_FAULT_ALLOC", "",
            "fault injection for tests: N makes the N-th allocation of the process (over every "
            "device) fail as out of memory; the ones after it succeed"},
};

}  // namespace

std::span<const VarInfo> table() { return kTable; }

const VarInfo& info(Var var) {
  return *std::find_if(kTable.begin(), kTable.end(), [&](const VarInfo& i) { return i.var == var; });
}

std::optional<std::string> value(Var var) {
  const char* raw = std::getenv(std::string(info(var).name).c_str());
  if (raw == nullptr || *raw == '\0') return std::nullopt;
  return std::string(raw);
}

bool flag(Var var) {
  auto v = value(var);
  if (!v) return false;
  std::string s = *v;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s == "1" || s == "true" || s == "on" || s == "yes";
}

size_t parse_bytes(Var var, std::string_view text) {
  size_t pos = 0;
  unsigned long long number = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
    number = number * 10 + static_cast<unsigned>(text[pos] - '0');
    ++pos;
  }
  std::string_view suffix = text.substr(pos);
  int shift = -1;
  if (suffix.empty() || suffix == "B") shift = 0;
  else if (suffix == "K" || suffix == "KiB") shift = 10;
  else if (suffix == "M" || suffix == "MiB") shift = 20;
  else if (suffix == "G" || suffix == "GiB") shift = 30;
  if (pos == 0 || shift < 0) {
    throw Error(Errc::invalid_argument,
                fmt::format("{}='{}': expected a byte count such as 1048576, 512K, 64M or 2G",
                            info(var).name, text));
  }
  return static_cast<size_t>(number) << shift;
}

std::optional<int64_t> integer(Var var) {
  const auto text = value(var);
  if (!text) return std::nullopt;
  int64_t number = 0;
  const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), number);
  if (ec != std::errc() || end != text->data() + text->size()) {
    throw Error(Errc::invalid_argument, fmt::format("{}='{}': expected an integer", info(var).name, *text));
  }
  return number;
}

void throw_unknown_choice(Var var, std::string_view text, std::string_view names) {
  throw Error(Errc::invalid_argument, fmt::format("{}={}: expected one of {}", info(var).name, text, names));
}

}  // namespace xhal::env

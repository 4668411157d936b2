#include "core/env.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cstdlib>

#include "core/text_format.hpp"
#include "xhal/error.hpp"

namespace xhal::env {
namespace {

constexpr int64_t kMaxRank = 2147483646, kMaxWorld = 2147483647;  // ranks are int32 in NCCL and MPI

constexpr std::array kTable{
    VarInfo{Var::backend_type, "BACKEND_TYPE", Rule::name, "auto",
            "default device type: auto, cpu, cuda, hip, ze or an alias (nvidia, amd, rocm, hygon, dcu, intel, "
            "level_zero)",
            "DeviceManager::default_device() throws invalid_argument (unknown name) or backend_unavailable (no "
            "plugin or device for it)"},
    VarInfo{Var::plugin_path,
            "XHAL_PLUGIN_PATH",
            Rule::paths,
            "",
            "colon-separated absolute directories searched first for libxhal_<backend>.so plugins",
            "a relative entry is ignored with a warning; the others are searched",
            {},
            0,
            0,
            true},
    VarInfo{Var::log_level, "XHAL_LOG_LEVEL", Rule::choice, "warn", "log level", "warned about; the level stays warn",
            "trace, debug, info, warn, error, critical, off"},
    VarInfo{Var::allocator, "XHAL_ALLOCATOR", Rule::choice, "caching",
            "caching, or direct: every allocation goes to the driver (for sanitizers)",
            "warned about; the caching allocator is used", "caching, direct"},
    VarInfo{Var::memory_limit, "XHAL_MEMORY_LIMIT", Rule::bytes, "",
            "cap on the bytes each device's allocator reserves, e.g. 512M or 2G; beyond it an allocation fails as "
            "out of memory",
            "warned about; no limit is applied"},
    VarInfo{Var::strict, "XHAL_STRICT", Rule::flag, "0",
            "1: a call that a higher-priority kernel refuses is an error instead of falling back",
            "warned about; strict mode stays off"},
    VarInfo{Var::deterministic, "XHAL_DETERMINISTIC", Rule::flag, "0",
            "1: every op gives bitwise-identical results run to run (kernels that cannot are passed over)",
            "warned about; deterministic mode stays off"},
    VarInfo{Var::force_reference, "XHAL_FORCE_REFERENCE", Rule::list, "",
            "comma-separated op names that always use their backend's reference kernel",
            "an item that names no op is warned about and skipped; the others apply"},
    VarInfo{Var::disable_kernels, "XHAL_DISABLE_KERNELS", Rule::list, "",
            "comma-separated kernel names (as xhal-info lists them) never to pick; the next kernel that supports "
            "the call runs instead",
            "an item that names no kernel changes nothing"},
    VarInfo{Var::cpu_disable, "XHAL_CPU_DISABLE", Rule::list, "",
            "comma-separated instruction sets the CPU kernels must not use: avx512, avx2, avx512_bf16, amx, vnni",
            "an unknown item keeps the cpu plugin from loading; xhal-info and every op on the cpu say why"},
    VarInfo{Var::rank,
            "RANK",
            Rule::integer,
            "",
            "this process's rank for xhal::comm communicators (checked against MPI's under mpirun)",
            "Communicator::create throws invalid_argument",
            {},
            0,
            kMaxRank},
    VarInfo{Var::world_size,
            "WORLD_SIZE",
            Rule::integer,
            "",
            "the number of ranks for xhal::comm communicators (checked against MPI's under mpirun)",
            "Communicator::create throws invalid_argument",
            {},
            1,
            kMaxWorld},
    VarInfo{Var::store,
            "XHAL_STORE",
            Rule::store,
            "",
            "file:<path>: how rank 0's bootstrap id reaches the other ranks of an NCCL/RCCL communicator outside "
            "mpirun (a path all ranks see, fresh for each job)",
            "Communicator::create throws invalid_argument",
            {},
            0,
            0,
            true},
    VarInfo{Var::check, "XHAL_CHECK", Rule::choice, "off",
            "cpu: every op also runs on the CPU reference kernel and its outputs are compared (the shadow check; "
            "slow, for finding a diverging op); off",
            "every op throws invalid_argument until it is fixed", "off, cpu"},
    VarInfo{Var::check_action, "XHAL_CHECK_ACTION", Rule::choice, "log",
            "what a divergence found by XHAL_CHECK does: log (a warning) or throw (xhal::Error, code internal)",
            "every op throws invalid_argument until it is fixed", "log, throw"},
    VarInfo{Var::trace,
            "XHAL_TRACE",
            Rule::path,
            "",
            "a file to write a Chrome/Perfetto trace of every op call to (JSON; xhal-info --trace-summary reads "
            "it)",
            "a file that cannot be created makes every op throw invalid_argument; a write that fails stops the "
            "trace with an error logged",
            {},
            0,
            0,
            true},
    VarInfo{Var::fault_alloc,
            "XHAL_FAULT_ALLOC",
            Rule::integer,
            "",
            "fault injection for tests: N makes the N-th allocation of the process (over every device) fail as "
            "out of memory; the ones after it succeed",
            "warned about; no fault is injected",
            {},
            1,
            INT64_MAX},
};

std::string_view rule_text(const VarInfo& i) {
  switch (i.rule) {
    case Rule::name: return "a backend name such as auto, cpu or cuda";
    case Rule::choice: return i.choices;
    case Rule::flag: return "1, true, on, yes, 0, false, off or no";
    case Rule::bytes: return "a byte count below 2^64 such as 1048576, 512K, 64M or 2G";
    case Rule::integer: return "an integer";
    case Rule::list: return "a comma-separated list";
    case Rule::paths: return "colon-separated absolute directories";
    case Rule::path: return "a file path";
    case Rule::store: return "file:<path>";
  }
  return "";
}

bool is_name(std::string_view s) {
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

bool in_choices(std::string_view choices, std::string_view word) {
  while (!choices.empty()) {
    const size_t comma = choices.find(',');
    if (trim(choices.substr(0, comma)) == word) return true;
    choices = comma == std::string_view::npos ? "" : choices.substr(comma + 1);
  }
  return false;
}

// The value's error, naming the variable, the value as given and what is accepted.
[[noreturn]] void throw_problem(Var var, std::string_view text) {
  throw Error(Errc::invalid_argument, *problem(var, text));
}

}  // namespace

std::span<const VarInfo> table() { return kTable; }

const VarInfo& info(Var var) {
  return *std::find_if(kTable.begin(), kTable.end(), [&](const VarInfo& i) { return i.var == var; });
}

std::string trim(std::string_view text) {
  const auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  return std::string(text);
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::optional<std::string> value(Var var) {
  const VarInfo& i = info(var);
  const std::string name(i.name);
  const char* raw = i.secure ? secure_getenv(name.c_str()) : std::getenv(name.c_str());
  if (raw == nullptr) return std::nullopt;
  std::string text = trim(raw);
  if (text.empty()) return std::nullopt;
  return text;
}

std::optional<uint64_t> parse_bytes(std::string_view text) {
  const std::string t = lower(trim(text));
  uint64_t number = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), number);
  if (ec != std::errc() || end == t.data()) return std::nullopt;  // no digits, a sign, or past 2^64
  const std::string suffix = trim(std::string_view(end, size_t(t.data() + t.size() - end)));
  constexpr std::pair<std::string_view, int> kSuffixes[] = {{"", 0},   {"b", 0},    {"k", 10}, {"kib", 10},
                                                            {"m", 20}, {"mib", 20}, {"g", 30}, {"gib", 30},
                                                            {"t", 40}, {"tib", 40}};
  for (const auto& [name, shift] : kSuffixes) {
    if (suffix != name) continue;
    if (shift > 0 && number > (UINT64_MAX >> shift)) return std::nullopt;
    return number << shift;
  }
  return std::nullopt;
}

std::optional<std::string> problem(Var var, std::string_view raw) {
  const VarInfo& i = info(var);
  const std::string text = trim(raw);
  if (text.empty()) return std::nullopt;
  const auto bad = [&](std::string_view why = {}) {
    return format_text("{}='{}': expected {}{}", i.name, raw, why.empty() ? rule_text(i) : why,
                       i.rule == Rule::integer ? format_text(" in [{}, {}]", i.min, i.max) : "");
  };
  switch (i.rule) {
    case Rule::name:
      if (!is_name(text)) return bad();
      return std::nullopt;
    case Rule::choice:
      if (!in_choices(i.choices, lower(text))) return bad(format_text("one of {}", i.choices));
      return std::nullopt;
    case Rule::flag:
      if (!in_choices("1, true, on, yes, 0, false, off, no", lower(text))) return bad();
      return std::nullopt;
    case Rule::bytes:
      if (!parse_bytes(text)) return bad();
      return std::nullopt;
    case Rule::integer: {
      int64_t n = 0;
      const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
      if (ec != std::errc() || end != text.data() + text.size() || n < i.min || n > i.max) return bad();
      return std::nullopt;
    }
    case Rule::list:
    case Rule::paths:
    case Rule::path: return std::nullopt;  // any text; the reader judges the items
    case Rule::store:
      if (text.rfind("file:", 0) != 0 || trim(text.substr(5)).empty()) return bad();
      return std::nullopt;
  }
  return std::nullopt;
}

std::optional<bool> flag(Var var) {
  const auto text = value(var);
  if (!text) return std::nullopt;
  if (problem(var, *text)) throw_problem(var, *text);
  return in_choices("1, true, on, yes", lower(*text));
}

std::optional<uint64_t> bytes(Var var) {
  const auto text = value(var);
  if (!text) return std::nullopt;
  const auto n = parse_bytes(*text);
  if (!n) throw_problem(var, *text);
  return n;
}

std::optional<int64_t> integer(Var var) {
  const auto text = value(var);
  if (!text) return std::nullopt;
  if (problem(var, *text)) throw_problem(var, *text);
  int64_t n = 0;
  std::from_chars(text->data(), text->data() + text->size(), n);
  return n;
}

std::vector<std::string> list(Var var) {
  std::vector<std::string> items;
  std::string_view rest;
  const auto text = value(var);
  if (text) rest = *text;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    if (std::string item = lower(trim(rest.substr(0, comma))); !item.empty()) items.push_back(std::move(item));
    rest = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
  }
  return items;
}

std::optional<std::string> choice_text(Var var) {
  const auto text = value(var);
  if (!text) return std::nullopt;
  if (problem(var, *text)) throw_problem(var, *text);
  return lower(*text);
}

}  // namespace xhal::env

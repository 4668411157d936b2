// The environment variables xhal reads, in one table, each parsed by its rule here and nowhere else
// (docs/configuration.md lists them). Every value is trimmed of surrounding spaces; empty is unset.
// A value its rule refuses is an Error(invalid_argument) naming the variable, the value and what
// is accepted; whether that fails the caller or is warned about once (env_warnings.hpp) is the
// reader's choice, stated in the table's `on_bad` text.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace xhal::env {

enum class Var {
  backend_type,
  plugin_path,
  log_level,
  allocator,
  memory_limit,
  strict,
  deterministic,
  force_reference,
  disable_kernels,
  cpu_disable,
  rank,
  world_size,
  store,
  check,
  check_action,
  trace,
  fault_alloc,
};

// How a variable's text is read.
enum class Rule {
  name,  // a backend name or alias: [a-z][a-z0-9_]*, any case
  choice,  // one of `choices`, any case
  flag,  // 1, true, on, yes / 0, false, off, no, any case
  bytes,  // 1048576, 512K, 64M, 2G, 1T (powers of 1024; KiB.. and B too), any case, < 2^64
  integer,  // a decimal integer in [min, max]
  list,  // comma-separated items, each trimmed and lower-cased, empty ones dropped
  paths,  // colon-separated absolute directories (relative ones are ignored with a warning)
  path,  // a file path
  store,  // file:<path>
};

struct VarInfo {
  Var var;
  std::string_view name;
  Rule rule;
  std::string_view default_value;
  std::string_view meaning;
  std::string_view on_bad;  // what a value the rule refuses does
  std::string_view choices = {};  // Rule::choice: "a, b, c"
  int64_t min = 0, max = 0;  // Rule::integer
  // Read with secure_getenv: it decides what code is loaded or which file is written, so a setuid
  // program ignores it.
  bool secure = false;
};

std::span<const VarInfo> table();
const VarInfo& info(Var var);

// The variable's text, trimmed; nothing when unset or empty (or, for a `secure` one, when the
// process runs with elevated privileges).
std::optional<std::string> value(Var var);

// Why `text` breaks the variable's rule (a message naming the variable, the text and what is
// accepted), or nothing when it keeps it. What the readers below throw.
std::optional<std::string> problem(Var var, std::string_view text);

// The readers: nothing (or the default) when unset; Error(invalid_argument) with problem()'s
// message when the value breaks the rule.
std::optional<bool> flag(Var var);
std::optional<uint64_t> bytes(Var var);
std::optional<int64_t> integer(Var var);
std::vector<std::string> list(Var var);
// The value among `choices` (matched in any case), `fallback` when unset.
template <class T>
T choice(Var var, std::initializer_list<std::pair<std::string_view, T>> choices, T fallback);

// Parsing by one rule, exposed for tests and for the readers.
std::string trim(std::string_view text);
std::string lower(std::string_view text);
std::optional<uint64_t> parse_bytes(std::string_view text);  // nothing when not a byte count

// --- implementation of the templates ---

std::optional<std::string> choice_text(Var var);  // lower-cased, checked against the table's choices

template <class T>
T choice(Var var, std::initializer_list<std::pair<std::string_view, T>> choices, T fallback) {
  const auto text = choice_text(var);
  if (!text) return fallback;
  for (const auto& [name, v] : choices) {
    if (*text == name) return v;
  }
  return fallback;  // unreachable when `choices` match the table's
}

}  // namespace xhal::env

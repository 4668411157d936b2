#include "core/backend_names.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <vector>

#include "core/env.hpp"
#include "core/text_format.hpp"

namespace xhal::backend_names {
namespace {

struct Alias {
  std::string_view alias;
  std::string_view backend;
};

// Other names users and vendors give the accelerators; the backend is the plugin's <name>.
constexpr std::array kAliases{
    Alias{"nvidia", "cuda"},   Alias{"amd", "hip"},       Alias{"rocm", "hip"},           Alias{"hygon", "hip"},
    Alias{"dcu", "hip"},       Alias{"intel", "ze"},      Alias{"level_zero", "ze"},      Alias{"ascend", "npu"},
    Alias{"huawei", "npu"},    Alias{"cambricon", "mlu"}, Alias{"moore_threads", "musa"}, Alias{"kunlun", "xpu"},
    Alias{"kunlunxin", "xpu"},
};

// The backends that have names in the alias table, in the order known_list() shows them.
constexpr std::array<std::string_view, 8> kTableBackends{"cpu", "cuda", "hip", "ze", "npu", "mlu", "musa", "xpu"};

constexpr size_t kMaxNameLength = 32;

// Codes 0-3 are fixed; the others are handed out once and never change, so readers need no lock.
struct Names {
  std::array<std::array<char, kMaxNameLength + 1>, kMaxBackends> names{};
  std::atomic<int> count{0};
  std::mutex mutex;  // taken to hand out a code
  Names() {
    for (std::string_view fixed : {"cpu", "cuda", "hip", "ze"}) {
      std::copy(fixed.begin(), fixed.end(), names[size_t(count.load())].begin());
      count.fetch_add(1);
    }
  }
};

Names& names() {
  static Names* all = new Names();  // never destroyed: device names outlive static destruction
  return *all;
}

}  // namespace

bool is_valid_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength || !(name[0] >= 'a' && name[0] <= 'z')) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; });
}

std::string canonical(std::string_view name) {
  const std::string key = env::lower(name);
  for (const Alias& a : kAliases) {
    if (a.alias == key) return std::string(a.backend);
  }
  return key;
}

std::optional<DeviceType> lookup(std::string_view name) {
  const std::string key = canonical(name);
  Names& all = names();
  const int count = all.count.load(std::memory_order_acquire);
  for (int i = 0; i < count; ++i) {
    if (key == all.names[size_t(i)].data()) return DeviceType(i);
  }
  return std::nullopt;
}

std::optional<DeviceType> register_name(std::string_view name) {
  if (!is_valid_name(name) || canonical(name) != name) return std::nullopt;  // aliases are not backends
  Names& all = names();
  std::lock_guard lock(all.mutex);
  if (auto known = lookup(name); known && name_of(*known) == name) return known;
  const int code = all.count.load();
  if (code >= kMaxBackends) return std::nullopt;
  std::copy(name.begin(), name.end(), all.names[size_t(code)].begin());
  all.count.store(code + 1, std::memory_order_release);
  return DeviceType(code);
}

std::string_view name_of(DeviceType type) {
  const Names& all = names();
  if (int(type) >= all.count.load(std::memory_order_acquire)) return "";
  return all.names[size_t(type)].data();
}

std::string known_list() {
  std::vector<std::string_view> backends(kTableBackends.begin(), kTableBackends.end());
  Names& all = names();
  for (int i = 0; i < all.count.load(std::memory_order_acquire); ++i) {
    const std::string_view name = all.names[size_t(i)].data();
    if (std::find(backends.begin(), backends.end(), name) == backends.end()) backends.push_back(name);
  }
  std::string out = "auto";
  for (std::string_view backend : backends) {
    std::string aliases;
    for (const Alias& a : kAliases) {
      if (a.backend == backend) aliases += format_text("{}{}", aliases.empty() ? "" : ", ", a.alias);
    }
    out += format_text(", {}", backend);
    if (!aliases.empty()) out += format_text(" ({})", aliases);
  }
  return out;
}

}  // namespace xhal::backend_names

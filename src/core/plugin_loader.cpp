#include "core/plugin_loader.hpp"

#include <dlfcn.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <regex>
#include <set>

#include "core/backend_names.hpp"
#include "core/env.hpp"
#include "core/env_warnings.hpp"
#include "core/host_api.hpp"
#include "core/logging.hpp"
#include "core/registry.hpp"
#include "core/text_format.hpp"

#ifndef XHAL_INSTALL_LIBDIR
#define XHAL_INSTALL_LIBDIR "/usr/local/lib"
#endif

namespace xhal {
namespace fs = std::filesystem;
namespace {

// The canonical directory of libxhal, resolved once as the library loads: dladdr gives the path it
// was loaded by, which may be relative (found through a relative LD_LIBRARY_PATH) and would point
// elsewhere once the program changes directory.
std::string canonical_library_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&canonical_library_dir), &info) == 0 || info.dli_fname == nullptr) return "";
  std::error_code ec;
  const fs::path file = fs::canonical(info.dli_fname, ec);
  return ec ? "" : file.parent_path().string();
}
const std::string g_library_dir = canonical_library_dir();

// The name in libxhal_<name>.so, or "" for any other file name.
std::string plugin_name(const fs::path& file) {
  static const std::regex kPluginName("libxhal_([A-Za-z0-9_]+)\\.so");
  std::smatch match;
  const std::string name = file.filename().string();
  return std::regex_match(name, match, kPluginName) ? match[1].str() : "";
}

// Whether users other than the owner (and root) may write what `st` describes. Group write counts
// unless the group is the owner's private one (its primary group, with no other members), which
// Debian's umask 002 for users gives every file they create.
bool writable_by_others(const struct stat& st) {
  if ((st.st_mode & S_IWOTH) != 0) return true;
  if ((st.st_mode & S_IWGRP) == 0) return false;
  std::vector<char> buffer(1 << 16);
  passwd owner{};
  group grp{};
  passwd* owner_found = nullptr;
  group* group_found = nullptr;
  if (getpwuid_r(st.st_uid, &owner, buffer.data(), buffer.size() / 2, &owner_found) != 0 || owner_found == nullptr ||
      getgrgid_r(st.st_gid, &grp, buffer.data() + buffer.size() / 2, buffer.size() / 2, &group_found) != 0 ||
      group_found == nullptr) {
    return true;
  }
  const bool private_group = owner.pw_gid == st.st_gid && (grp.gr_mem == nullptr || grp.gr_mem[0] == nullptr);
  return !private_group;
}

}  // namespace

std::string writable_reason(const std::string& path) {
  std::error_code ec;
  const fs::path given = fs::absolute(path, ec);
  const fs::path real = fs::canonical(path, ec);
  if (ec) return "";  // missing: dlopen says so
  for (const fs::path& p : {real, real.parent_path(), given.parent_path()}) {
    struct stat st {};
    if (stat(p.c_str(), &st) != 0) continue;
    if (writable_by_others(st)) {
      return format_text(
          "refused: {} is writable by users other than its owner and root (mode {:04o}); a plugin "
          "runs code in every process that loads xhal",
          p.string(), st.st_mode & 07777);
    }
  }
  return "";
}

std::vector<std::string> xhal_library_dirs() {
  std::vector<std::string> dirs;
  if (!g_library_dir.empty()) dirs.push_back(g_library_dir);
  if (g_library_dir != XHAL_INSTALL_LIBDIR) dirs.push_back(XHAL_INSTALL_LIBDIR);
  return dirs;
}

std::vector<std::string> plugin_search_dirs() {
  std::vector<std::string> dirs, relative;
  if (auto path = env::value(env::Var::plugin_path)) {
    std::string_view rest = *path;
    while (!rest.empty()) {
      const auto colon = rest.find(':');
      const std::string dir = env::trim(rest.substr(0, colon));
      if (!dir.empty()) (fs::path(dir).is_absolute() ? dirs : relative).push_back(dir);
      rest = colon == std::string_view::npos ? "" : rest.substr(colon + 1);
    }
  }
  if (!relative.empty()) {
    env::warn_bad_value(env::Var::plugin_path,
                        format_text("XHAL_PLUGIN_PATH has relative entries ({}), which would name other directories "
                                    "as the program changes its own",
                                    join_text(relative, ", ")));
  }
  if (!g_library_dir.empty()) dirs.push_back(g_library_dir);
  dirs.emplace_back(XHAL_INSTALL_LIBDIR);
  return dirs;
}

std::vector<std::string> find_plugin_files() {
  std::vector<std::string> files;
  std::set<std::string> seen;
  for (const auto& dir : plugin_search_dirs()) {
    std::error_code ec;
    std::vector<fs::path> here;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (!plugin_name(entry.path()).empty()) here.push_back(entry.path());
    }
    std::sort(here.begin(), here.end());
    for (const auto& p : here) {
      if (seen.insert(p.filename().string()).second) files.push_back(p.string());
    }
  }
  return files;
}

namespace {

// The first required member of the table a plugin left unset (plugin.h marks the optional ones).
const char* missing_member(const xhal_plugin_api& api) {
  if (api.struct_size < XHAL_PLUGIN_API_MIN_SIZE) return "struct_size";
  const std::pair<const char*, bool> required[] = {
      {"backend", api.backend != nullptr},
      {"device_count", api.device_count != nullptr},
      {"query_int", api.query_int != nullptr},
      {"query_text", api.query_text != nullptr},
      {"mem_info", api.mem_info != nullptr},
      {"mem_alloc", api.mem_alloc != nullptr},
      {"mem_release", api.mem_release != nullptr},
      {"mem_copy", api.mem_copy != nullptr},
      {"stream_create", api.stream_create != nullptr},
      {"stream_destroy", api.stream_destroy != nullptr},
      {"stream_synchronize", api.stream_synchronize != nullptr},
      {"device_synchronize", api.device_synchronize != nullptr},
      {"event_create", api.event_create != nullptr},
      {"event_destroy", api.event_destroy != nullptr},
      {"event_record", api.event_record != nullptr},
      {"event_query", api.event_query != nullptr},
      {"event_synchronize", api.event_synchronize != nullptr},
      {"stream_wait_event", api.stream_wait_event != nullptr},
  };
  for (const auto& [name, set] : required) {
    if (!set) return name;
  }
  return nullptr;
}

}  // namespace

LoadedPlugin load_plugin_file(const std::string& path, PluginSource source, Registry& registry) {
  LoadedPlugin plugin;
  plugin.info.path = path;
  // Until init names the backend, call it by its file name (libxhal_cuda.so -> "cuda").
  const std::string name = plugin_name(path);
  plugin.info.name = name.empty() ? fs::path(path).stem().string() : name;
  auto fail = [&](std::string reason) {
    plugin.info.reason = std::move(reason);
    log(LogLevel::info, "plugin {} not loaded: {}", path, plugin.info.reason);
    return std::move(plugin);
  };

  // Checked before dlopen, which runs the library's constructors.
  if (source == PluginSource::search_path && !backend_names::is_valid_name(name)) {
    return fail(
        format_text("not opened: '{}' is not a backend name ([a-z][a-z0-9_]{{0,31}}); "
                    "DeviceManager::load_plugin loads a plugin of another file name",
                    name));
  }
  if (source == PluginSource::search_path && backend_names::canonical(name) != name) {
    return fail(format_text("not opened: '{}' is another name of the {} backend; its plugin is libxhal_{}.so", name,
                            backend_names::canonical(name), backend_names::canonical(name)));
  }
  if (std::string why = writable_reason(path); !why.empty()) return fail(std::move(why));
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    return fail(format_text("cannot open: {}", err ? err : "unknown dlopen error"));
  }
  auto init = reinterpret_cast<xhal_plugin_init_fn>(dlsym(handle, XHAL_PLUGIN_ENTRY));
  if (init == nullptr) {
    dlclose(handle);
    return fail(format_text("missing entry point {} (not an xhal plugin?)", XHAL_PLUGIN_ENTRY));
  }
  // The ABI version is asked before init: init's arguments are laid out by that version.
  auto abi_version = reinterpret_cast<xhal_plugin_abi_version_fn>(dlsym(handle, XHAL_PLUGIN_ABI_ENTRY));
  if (abi_version == nullptr) {
    return fail(
        format_text("a plugin of ABI version 1 (it has no {}); this xhal loads ABI version {} plugins: "
                    "rebuild it against this xhal's xhal/plugin.h",
                    XHAL_PLUGIN_ABI_ENTRY, XHAL_PLUGIN_ABI_VERSION));
  }
  if (const uint32_t version = abi_version(); version != XHAL_PLUGIN_ABI_VERSION) {
    return fail(
        format_text("a plugin of ABI version {}; this xhal loads ABI version {} plugins: rebuild it "
                    "against this xhal's xhal/plugin.h",
                    version, XHAL_PLUGIN_ABI_VERSION));
  }

  plugin.context = std::make_unique<PluginHostContext>();
  plugin.context->registry = &registry;
  plugin.context->host = make_host_api(plugin.context.get());
  plugin.api.struct_size = sizeof(xhal_plugin_api);
  char reason[512] = {};
  xhal_status status = XHAL_OK;
  try {
    status = init(&plugin.context->host, &plugin.api, reason, sizeof reason);
  } catch (const std::exception& e) {
    // A C++ plugin interrupted by an exception: refused like a failed init, its kernels dropped.
    return fail(format_text("initialisation threw: {}", e.what()));
  } catch (...) {
    return fail("initialisation threw an exception of unknown type");
  }
  reason[sizeof reason - 1] = '\0';
  // The handle stays open even on failure: a plugin may have started threads or registered
  // destructors, and unloading such code is not safe.
  if (status != XHAL_OK) {
    return fail(format_text("initialisation failed: {}", reason[0] ? reason : "no reason given"));
  }
  if (plugin.api.abi_version != XHAL_PLUGIN_ABI_VERSION) {
    return fail(format_text("its table says ABI version {} but xhal_plugin_abi_version() said {}",
                            plugin.api.abi_version, XHAL_PLUGIN_ABI_VERSION));
  }
  if (const char* missing = missing_member(plugin.api)) {
    return fail(format_text("the plugin's function table is incomplete: {} is not set", missing));
  }
  if (plugin.api.struct_size < sizeof(xhal_plugin_api)) {  // built before the optional tail
    std::memset(reinterpret_cast<char*>(&plugin.api) + plugin.api.struct_size, 0,
                sizeof(xhal_plugin_api) - plugin.api.struct_size);
  }
  const std::string backend = plugin.api.backend;
  if (!backend_names::is_valid_name(backend) || backend_names::canonical(backend) != backend) {
    return fail(
        format_text("names backend '{}', which is not a backend name ([a-z][a-z0-9_]{{0,31}}, not an "
                    "alias such as nvidia)",
                    backend));
  }
  if (source == PluginSource::search_path && backend != name) {
    return fail(
        format_text("names backend '{}' but its file is libxhal_{}.so; the search path takes a "
                    "backend only from the file of its name",
                    backend, name));
  }
  const auto type = backend_names::register_name(backend);
  if (!type) {
    return fail(
        format_text("backend '{}' cannot be added: this process already has {} backends", backend, kMaxBackends));
  }
  plugin.type = *type;
  plugin.info.name = backend;
  plugin.info.version = plugin.api.version ? plugin.api.version : "";
  plugin.info.loaded = true;
  plugin.context->type = *type;
  return plugin;
}

}  // namespace xhal

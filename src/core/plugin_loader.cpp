#include "core/plugin_loader.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "core/backend_names.hpp"
#include "core/env.hpp"
#include "core/host_api.hpp"
#include "core/logging.hpp"
#include "core/registry.hpp"

#ifndef XHAL_INSTALL_LIBDIR
#define XHAL_INSTALL_LIBDIR "/usr/local/lib"
#endif

namespace xhal {
namespace fs = std::filesystem;

std::vector<std::string> plugin_search_dirs() {
  std::vector<std::string> dirs;
  if (auto path = env::value(env::Var::plugin_path)) {
    std::string_view rest = *path;
    while (!rest.empty()) {
      auto colon = rest.find(':');
      if (colon != 0) dirs.emplace_back(rest.substr(0, colon));
      rest = colon == std::string_view::npos ? "" : rest.substr(colon + 1);
    }
  }
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&plugin_search_dirs), &info) != 0 && info.dli_fname) {
    dirs.push_back(fs::path(info.dli_fname).parent_path().string());
  }
  dirs.emplace_back(XHAL_INSTALL_LIBDIR);
  return dirs;
}

std::vector<std::string> find_plugin_files() {
  static const std::regex kPluginName("libxhal_[A-Za-z0-9_]+\\.so");
  std::vector<std::string> files;
  std::set<std::string> seen;
  for (const auto& dir : plugin_search_dirs()) {
    std::error_code ec;
    std::vector<fs::path> here;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      if (std::regex_match(name, kPluginName)) here.push_back(entry.path());
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
      {"device_props", api.device_props != nullptr},
      {"mem_get_info", api.mem_get_info != nullptr},
      {"malloc", api.malloc != nullptr},
      {"free", api.free != nullptr},
      {"memcpy", api.memcpy != nullptr},
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
      {"last_error", api.last_error != nullptr},
  };
  for (const auto& [name, set] : required) {
    if (!set) return name;
  }
  return nullptr;
}

}  // namespace

LoadedPlugin load_plugin_file(const std::string& path) {
  LoadedPlugin plugin;
  plugin.info.path = path;
  // Until init names the backend, call it by its file name (libxhal_cuda.so -> "cuda").
  std::string stem = fs::path(path).stem().string();
  plugin.info.name = stem.rfind("libxhal_", 0) == 0 ? stem.substr(8) : stem;
  auto fail = [&](std::string reason) {
    plugin.info.reason = std::move(reason);
    log().info("plugin {} not loaded: {}", path, plugin.info.reason);
    return std::move(plugin);
  };

  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* err = dlerror();
    return fail(fmt::format("cannot open: {}", err ? err : "unknown dlopen error"));
  }
  auto init = reinterpret_cast<xhal_plugin_init_fn>(dlsym(handle, XHAL_PLUGIN_ENTRY));
  if (init == nullptr) {
    dlclose(handle);
    return fail(fmt::format("missing entry point {} (not an xhal plugin?)", XHAL_PLUGIN_ENTRY));
  }

  plugin.context = std::make_unique<PluginHostContext>();
  plugin.context->host = make_host_api(plugin.context.get());
  plugin.api.struct_size = sizeof(xhal_plugin_api);
  char reason[512] = {};
  xhal_status status = XHAL_OK;
  try {
    status = init(&plugin.context->host, &plugin.api, reason, sizeof reason);
  } catch (const std::exception& e) {
    // A C++ plugin interrupted by an exception: refused like a failed init, its kernels dropped.
    return fail(fmt::format("initialisation threw: {}", e.what()));
  } catch (...) {
    return fail("initialisation threw an exception of unknown type");
  }
  reason[sizeof reason - 1] = '\0';
  // The handle stays open even on failure: a plugin may have started threads or registered
  // destructors, and unloading such code is not safe.
  if (status != XHAL_OK) {
    return fail(fmt::format("initialisation failed: {}", reason[0] ? reason : "no reason given"));
  }
  if (plugin.api.abi_version != XHAL_PLUGIN_ABI_VERSION) {
    return fail(fmt::format("ABI version mismatch: plugin has {}, this xhal needs {}",
                            plugin.api.abi_version, XHAL_PLUGIN_ABI_VERSION));
  }
  if (const char* missing = missing_member(plugin.api)) {
    return fail(fmt::format("the plugin's function table is incomplete: {} is not set", missing));
  }
  if (plugin.api.struct_size < sizeof(xhal_plugin_api)) {  // built before the optional tail
    std::memset(reinterpret_cast<char*>(&plugin.api) + plugin.api.struct_size, 0,
                sizeof(xhal_plugin_api) - plugin.api.struct_size);
  }
  auto type = backend_names::lookup(plugin.api.backend);
  if (!type || device_type_name(*type) != plugin.api.backend) {
    return fail(fmt::format("names unknown backend '{}'; expected cpu, cuda, hip or ze",
                            plugin.api.backend));
  }
  plugin.type = *type;
  plugin.info.name = plugin.api.backend;
  plugin.info.version = plugin.api.version ? plugin.api.version : "";
  plugin.info.loaded = true;
  plugin.context->type = *type;
  return plugin;
}

}  // namespace xhal

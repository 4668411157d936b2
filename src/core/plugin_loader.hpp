// Finding and loading backend plugins (libxhal_<backend>.so). Loading never throws: a plugin that
// cannot be opened, lacks the entry point, speaks another ABI version, fails to initialise or names
// an unknown backend comes back with loaded == false and the reason.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/host_api.hpp"
#include "xhal/device.hpp"
#include "xhal/device_manager.hpp"
#include "xhal/plugin.h"

namespace xhal {

struct LoadedPlugin {
  BackendInfo info;
  DeviceType type = DeviceType::cpu;
  xhal_plugin_api api{};
  std::unique_ptr<PluginHostContext> context;
};

// XHAL_PLUGIN_PATH's absolute entries, then the canonical directory of libxhal, then the install
// libdir.
std::vector<std::string> plugin_search_dirs();
// Files named libxhal_<name>.so in those directories, the first of each file name winning.
std::vector<std::string> find_plugin_files();

// The canonical directory of libxhal, then the install libdir: where xhal's own modules are.
std::vector<std::string> xhal_library_dirs();

// Why the library at `path` must not be loaded because someone other than its owner or root could
// have written it or its directory, or "" when neither is.
std::string writable_reason(const std::string& path);

enum class PluginSource {
  search_path,  // found in the search path: opened only when <name> is a backend name, which the
  // plugin must then register
  explicit_path,  // named by DeviceManager::load_plugin
};
// Opens and initialises one plugin; its kernels are committed to `registry` only on success. A file
// that others than its owner and root may write (or whose directory they may) is refused unopened.
LoadedPlugin load_plugin_file(const std::string& path, PluginSource source, Registry& registry);

}  // namespace xhal

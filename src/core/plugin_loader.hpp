// Finding and loading backend plugins (libxhal_<backend>.so). Loading never throws: a plugin that
// cannot be opened, lacks the entry point, speaks another ABI version, fails to initialise or names
// an unknown backend comes back with loaded == false and the reason.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "xhal/device.hpp"
#include "xhal/device_manager.hpp"
#include "xhal/plugin.h"

namespace xhal {

// Per plugin state the host API callbacks reach through their ctx pointer. Kernels registered
// during init are held back until init succeeds, so a failing plugin leaves nothing behind.
struct PluginHostContext {
  DeviceType type = DeviceType::cpu;
  bool committed = false;
  std::vector<xhal_kernel_desc> pending;
  std::vector<std::string> pending_names;
  xhal_host_api host{};
};

struct LoadedPlugin {
  BackendInfo info;
  DeviceType type = DeviceType::cpu;
  xhal_plugin_api api{};
  std::unique_ptr<PluginHostContext> context;
};

// XHAL_PLUGIN_PATH entries, then the directory of libxhal itself, then the install libdir.
std::vector<std::string> plugin_search_dirs();
// Plugin files in those directories, the first of each file name winning.
std::vector<std::string> find_plugin_files();
// Opens and initialises one plugin; kernels are committed to the registry only on success.
LoadedPlugin load_plugin_file(const std::string& path);

}  // namespace xhal

// The xhal_host_api table the core hands to each plugin: kernel registration, logging, scratch
// memory from the core's caching allocator.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/allocator.hpp"
#include "xhal/device.hpp"
#include "xhal/plugin.h"

namespace xhal {

class Registry;

// Per plugin state the host API callbacks reach through their ctx pointer. Kernels registered
// during init are held back until init succeeds, so a failing plugin leaves nothing behind.
struct PluginHostContext {
  DeviceType type = DeviceType::cpu;
  bool committed = false;
  std::vector<xhal_kernel_desc> pending;
  std::vector<std::string> pending_names;
  xhal_host_api host{};
  Registry* registry = nullptr;  // where its kernels go (the runtime's)
  // The backend's allocators, one per device, for scratch memory; set once the backend is added.
  const std::vector<std::unique_ptr<CachingAllocator>>* allocators = nullptr;
};

xhal_host_api make_host_api(PluginHostContext* context);
// Registers the kernels a plugin registered during a successful init.
void commit_pending_kernels(PluginHostContext& context);

}  // namespace xhal

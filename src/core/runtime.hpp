// The process-wide runtime behind DeviceManager: loaded plugins, their devices and one caching
// allocator per device. Created on first use (thread-safe static); plugins are loaded then.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/allocator.hpp"
#include "core/plugin_call.hpp"
#include "core/plugin_loader.hpp"
#include "core/registry.hpp"
#include "xhal/device.hpp"

namespace xhal {

struct BackendState {
  LoadedPlugin plugin;
  std::vector<DeviceProperties> properties;  // per device index
  std::vector<std::unique_ptr<CachingAllocator>> allocators;
};

class Runtime {
 public:
  // The one process-wide object of the core: the plugins, their devices and allocators, and the
  // registry of their kernels.
  static Runtime& get();
  Registry& registry() { return registry_; }

  // The loaded backend of `type`, or NULL.
  const BackendState* backend(DeviceType type) const;
  // The loaded backend, other than cpu/cuda/hip/ze, whose plugin declared DLPack device type
  // `dl_type`; the first loaded when several did.
  std::optional<DeviceType> backend_for_dlpack(int32_t dl_type) const;
  // The backend owning `device`; throws Error(backend_unavailable) naming what exists.
  const BackendState& require(Device device) const;
  const xhal_plugin_api& api(Device device) const { return require(device).plugin.api; }
  CachingAllocator& allocator(Device device) const;

  std::vector<BackendInfo> backends() const;
  // "cpu, cuda": the backends whose plugins loaded, in load order ("none" when none did).
  std::string installed_list() const;
  BackendInfo load(const std::string& path, PluginSource source);

 private:
  Runtime();
  Registry registry_;  // before any plugin loads: plugins register into it
  void add_record(const BackendInfo& info);
  mutable std::mutex mutex_;  // held while a plugin is being added (guards owned_)
  // Every plugin tried, in load order; its own lock, taken inside mutex_ or alone, so that an
  // error naming a plugin's reason can be built during a load.
  mutable std::mutex records_mutex_;
  std::vector<BackendInfo> records_;
  std::vector<std::unique_ptr<BackendState>> owned_;
  // Published once a backend is complete and never changed after: op calls read it without a lock.
  std::array<std::atomic<const BackendState*>, kMaxBackends> backends_{};
  AllocatorConfig allocator_config_;
};

}  // namespace xhal

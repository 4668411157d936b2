#include "core/runtime.hpp"

#include <fmt/format.h>

#include "core/env.hpp"
#include "core/host_api.hpp"
#include "core/logging.hpp"
#include "xhal/error.hpp"

namespace xhal {

Runtime& Runtime::get() {
  // Never destroyed: plugins and tensors may outlive static destruction order.
  static Runtime* runtime = new Runtime();
  return *runtime;
}

Runtime::Runtime() {
  auto mode = env::value(env::Var::allocator);
  allocator_config_.direct = mode && *mode == "direct";
  if (mode && *mode != "direct" && *mode != "caching") {
    log().warn("XHAL_ALLOCATOR='{}' is not caching or direct; using caching", *mode);
  }
  if (auto limit = env::value(env::Var::memory_limit)) {
    try {
      allocator_config_.memory_limit = env::parse_bytes(env::Var::memory_limit, *limit);
    } catch (const Error& e) {
      log().error("{}; no limit applied", e.what());
    }
  }
  try {
    if (const auto at = env::integer(env::Var::fault_alloc); at && *at > 0) {
      allocator_config_.fail_allocation = *at;
      log().warn("XHAL_FAULT_ALLOC={}: allocation {} of this process will fail (fault injection)", *at, *at);
    } else if (at) {
      log().error("XHAL_FAULT_ALLOC={}: expected a positive integer; no fault injected", *at);
    }
  } catch (const Error& e) {
    log().error("{}; no fault injected", e.what());
  }
  for (const auto& file : find_plugin_files()) load(file);
}

BackendInfo Runtime::load(const std::string& path) {
  std::lock_guard lock(mutex_);
  LoadedPlugin plugin = load_plugin_file(path);
  if (const BackendState* existing = backend(plugin.type); plugin.info.loaded && existing != nullptr) {
    plugin.info.loaded = false;
    plugin.info.reason = fmt::format("backend {} is already provided by {}", plugin.info.name,
                                     existing->plugin.info.path);
  }
  if (plugin.info.loaded) {
    auto state = std::make_unique<BackendState>();
    char reason[512] = {};
    int count = plugin.api.device_count(reason, sizeof reason);
    reason[sizeof reason - 1] = '\0';
    if (count < 0) {  // the contract says 0 and a reason; a negative count is the plugin's bug
      log().warn("plugin {}: device_count returned {}; taken as no devices", path, count);
      count = 0;
    }
    plugin.info.reason = count > 0 ? "" : (reason[0] ? reason : "no devices");
    for (int i = 0; i < count; ++i) {
      xhal_device_props p{};
      if (plugin.api.device_props(i, &p) != XHAL_OK) {
        log().warn("{}:{}: cannot read properties: {}", plugin.info.name, i, plugin.api.last_error());
      }
      state->properties.push_back({p.name, p.arch, p.total_memory, p.compute_units, p.warp_size});
      state->allocators.push_back(std::make_unique<CachingAllocator>(
          Device{plugin.type, i}, state->plugin.api, allocator_config_));
    }
    plugin.info.device_count = count;
    commit_pending_kernels(*plugin.context);
    state->plugin = std::move(plugin);
    records_.push_back(state->plugin.info);
    log().info("plugin {} ({}) loaded from {}: {} device(s)", state->plugin.info.name,
               state->plugin.info.version, path, count);
    backends_[size_t(state->plugin.type)].store(state.get(), std::memory_order_release);
    owned_.push_back(std::move(state));
    return records_.back();
  }
  records_.push_back(plugin.info);
  return plugin.info;
}

const BackendState* Runtime::backend(DeviceType type) const {
  return backends_[size_t(type)].load(std::memory_order_acquire);
}

const BackendState& Runtime::require(Device device) const {
  const BackendState* state = backend(device.type);
  if (state == nullptr) {
    throw Error(Errc::backend_unavailable,
                fmt::format("device {}: the {} backend is not loaded (see xhal-info)", device.str(),
                            device_type_name(device.type)));
  }
  if (device.index < 0 || device.index >= int(state->properties.size())) {
    throw Error(Errc::backend_unavailable,
                fmt::format("device {}: the {} backend has {} device(s){}", device.str(),
                            device_type_name(device.type), state->properties.size(),
                            state->plugin.info.reason.empty() ? "" : ": " + state->plugin.info.reason));
  }
  return *state;
}

CachingAllocator& Runtime::allocator(Device device) const {
  return *require(device).allocators[size_t(device.index)];
}

std::vector<BackendInfo> Runtime::backends() const {
  std::lock_guard lock(mutex_);
  return records_;
}

void check_plugin(const xhal_plugin_api& api, xhal_status status, const char* what) {
  if (status != XHAL_OK) {
    throw_status(status == XHAL_NOT_READY ? XHAL_ERR_INTERNAL : status,
                 fmt::format("{} failed: {}", what, api.last_error()));
  }
}

}  // namespace xhal

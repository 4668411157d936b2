#include "core/runtime.hpp"

#include <algorithm>
#include <cstdint>

#include "core/env.hpp"
#include "core/env_warnings.hpp"
#include "core/host_api.hpp"
#include "core/logging.hpp"
#include "core/text_format.hpp"
#include "xhal/error.hpp"

namespace xhal {
namespace {

// Device `index`'s properties through the plugin's queries; a property it cannot tell stays empty
// (or 0), with a warning unless the plugin does not know the key.
DeviceProperties query_properties(const LoadedPlugin& plugin, int index) {
  DeviceProperties props;
  const auto warn = [&](const char* key, xhal_status status, const PluginMessage& message) {
    if (status != XHAL_ERR_UNSUPPORTED) {
      log(LogLevel::warn, "{}:{}: cannot read {}: {}", plugin.info.name, index, key, message.text);
    }
  };
  const auto text = [&](xhal_query key, const char* name) {
    char value[256] = "";
    PluginMessage message;
    const xhal_status status =
        plugin_status<&xhal_plugin_api::query_text>(plugin.api, message, index, key, value, sizeof value);
    value[sizeof value - 1] = '\0';
    if (status != XHAL_OK) warn(name, status, message);
    return status == XHAL_OK ? std::string(value) : std::string();
  };
  const auto integer = [&](xhal_query key, const char* name) {
    int64_t value = 0;
    PluginMessage message;
    const xhal_status status = plugin_status<&xhal_plugin_api::query_int>(plugin.api, message, index, key, &value);
    if (status != XHAL_OK) warn(name, status, message);
    return status == XHAL_OK ? value : 0;
  };
  props.name = text(XHAL_QUERY_NAME, "its name");
  props.arch = text(XHAL_QUERY_ARCH, "its arch");
  props.total_memory = uint64_t(std::max<int64_t>(0, integer(XHAL_QUERY_TOTAL_MEMORY, "its memory size")));
  props.compute_units = int(std::clamp<int64_t>(integer(XHAL_QUERY_COMPUTE_UNITS, "its compute units"), 0, INT32_MAX));
  props.warp_size = int(std::clamp<int64_t>(integer(XHAL_QUERY_WARP_SIZE, "its warp size"), 0, INT32_MAX));
  return props;
}

}  // namespace

Runtime& Runtime::get() {
  // Never destroyed: plugins and tensors may outlive static destruction order.
  static Runtime* runtime = new Runtime();
  return *runtime;
}

Runtime::Runtime() {
  const auto direct = [](env::Var v) { return env::choice(v, {{"caching", false}, {"direct", true}}, false); };
  allocator_config_.direct = env::or_warn(env::Var::allocator, direct, false);
  if (const auto limit = env::or_warn(env::Var::memory_limit, env::bytes, std::optional<uint64_t>())) {
    allocator_config_.memory_limit = size_t(std::min<uint64_t>(*limit, SIZE_MAX));
  }
  if (const auto at = env::or_warn(env::Var::fault_alloc, env::integer, std::optional<int64_t>())) {
    allocator_config_.fail_allocation = *at;
    log(LogLevel::warn, "XHAL_FAULT_ALLOC={}: allocation {} of this process will fail (fault injection)", *at, *at);
  }
  for (const auto& file : find_plugin_files()) load(file, PluginSource::search_path);
}

BackendInfo Runtime::load(const std::string& path, PluginSource source) {
  std::lock_guard lock(mutex_);
  LoadedPlugin plugin = load_plugin_file(path, source, registry_);
  if (const BackendState* existing = backend(plugin.type); plugin.info.loaded && existing != nullptr) {
    plugin.info.loaded = false;
    plugin.info.reason =
        format_text("backend {} is already provided by {}", plugin.info.name, existing->plugin.info.path);
  }
  if (plugin.info.loaded) {
    auto state = std::make_unique<BackendState>();
    char reason[512] = {};
    int count = plugin.api.device_count(plugin.api.self, reason, sizeof reason);
    reason[sizeof reason - 1] = '\0';
    if (count < 0) {  // the contract says 0 and a reason; a negative count is the plugin's bug
      log(LogLevel::warn, "plugin {}: device_count returned {}; taken as no devices", path, count);
      count = 0;
    }
    plugin.info.reason = count > 0 ? "" : (reason[0] ? reason : "no devices");
    for (int i = 0; i < count; ++i) {
      state->properties.push_back(query_properties(plugin, i));
      state->allocators.push_back(
          std::make_unique<CachingAllocator>(Device{plugin.type, i}, state->plugin.api, allocator_config_));
    }
    plugin.info.device_count = count;
    plugin.context->allocators = &state->allocators;
    commit_pending_kernels(*plugin.context);
    state->plugin = std::move(plugin);
    add_record(state->plugin.info);
    log(LogLevel::info, "plugin {} ({}) loaded from {}: {} device(s)", state->plugin.info.name,
        state->plugin.info.version, path, count);
    backends_[size_t(state->plugin.type)].store(state.get(), std::memory_order_release);
    owned_.push_back(std::move(state));
    return owned_.back()->plugin.info;
  }
  add_record(plugin.info);
  return plugin.info;
}

const BackendState* Runtime::backend(DeviceType type) const {
  return backends_[size_t(type)].load(std::memory_order_acquire);
}

std::optional<DeviceType> Runtime::backend_for_dlpack(int32_t dl_type) const {
  for (int code = int(DeviceType::ze) + 1; code < kMaxBackends; ++code) {
    const BackendState* state = backend(DeviceType(code));
    if (state != nullptr && state->plugin.api.dlpack_device_type == dl_type) return DeviceType(code);
  }
  return std::nullopt;
}

const BackendState& Runtime::require(Device device) const {
  const BackendState* state = backend(device.type);
  if (state == nullptr) {
    // The reason its plugin gave, if one was found (an XHAL_CPU_DISABLE name the cpu plugin does
    // not know, a failed driver): the error says why, not only that.
    std::string why = " (see xhal-info)";
    {
      std::lock_guard lock(records_mutex_);
      for (const BackendInfo& record : records_) {
        if (record.name == device_type_name(device.type) && !record.reason.empty()) {
          why = format_text(": its plugin {} was not loaded: {}", record.path, record.reason);
        }
      }
    }
    throw Error(Errc::backend_unavailable, format_text("device {}: the {} backend is not loaded{}", device.str(),
                                                       device_type_name(device.type), why));
  }
  if (device.index < 0 || device.index >= int(state->properties.size())) {
    throw Error(Errc::backend_unavailable,
                format_text("device {}: the {} backend has {} device(s){}", device.str(), device_type_name(device.type),
                            state->properties.size(),
                            state->plugin.info.reason.empty() ? "" : ": " + state->plugin.info.reason));
  }
  return *state;
}

CachingAllocator& Runtime::allocator(Device device) const { return *require(device).allocators[size_t(device.index)]; }

void Runtime::add_record(const BackendInfo& info) {
  std::lock_guard lock(records_mutex_);
  records_.push_back(info);
}

std::string Runtime::installed_list() const {
  std::string out;
  for (const BackendInfo& record : backends()) {
    if (record.loaded) out += format_text("{}{}", out.empty() ? "" : ", ", record.name);
  }
  return out.empty() ? "none" : out;
}

std::vector<BackendInfo> Runtime::backends() const {
  std::lock_guard lock(records_mutex_);
  return records_;
}

void throw_plugin_failure(xhal_status status, std::string_view what, const PluginMessage& message) {
  throw_status(status == XHAL_NOT_READY ? XHAL_ERR_INTERNAL : status,
               format_text("{} failed: {}", what, message.text[0] ? message.text : "no message given"));
}

}  // namespace xhal

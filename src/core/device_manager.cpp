#include "xhal/device_manager.hpp"

#include <map>

#include "core/backend_selection.hpp"
#include "core/logging.hpp"
#include "core/runtime.hpp"
#include "core/text_format.hpp"
#include "xhal/error.hpp"

namespace xhal {
namespace {

// The current stream of each device, per thread. Unset entries mean the default stream.
thread_local std::map<std::pair<int, int>, Stream> t_current_streams;

std::pair<int, int> key(Device d) { return {int(d.type), d.index}; }

}  // namespace

DeviceManager& DeviceManager::instance() {
  static DeviceManager manager;
  return manager;
}

DeviceManager::DeviceManager() { Runtime::get(); }
DeviceManager::~DeviceManager() = default;

std::vector<BackendInfo> DeviceManager::backends() const { return Runtime::get().backends(); }

std::vector<Device> DeviceManager::devices() const {
  std::vector<Device> out;
  for (int t = 0; t < kMaxBackends; ++t) {
    if (const BackendState* state = Runtime::get().backend(DeviceType(t))) {
      for (size_t i = 0; i < state->properties.size(); ++i) out.push_back({DeviceType(t), int(i)});
    }
  }
  return out;
}

bool DeviceManager::has_device(Device device) const {
  const BackendState* state = Runtime::get().backend(device.type);
  return state != nullptr && device.index >= 0 && device.index < int(state->properties.size());
}

Device DeviceManager::default_device() const {
  static std::once_flag logged;
  DefaultDeviceChoice choice = choose_default_device();
  std::call_once(logged, [&] { log(LogLevel::info, "{}", choice.reason); });
  return choice.device;
}

std::string DeviceManager::default_device_reason() const { return choose_default_device().reason; }

DeviceProperties DeviceManager::properties(Device device) const {
  return Runtime::get().require(device).properties[size_t(device.index)];
}

MemoryStatus DeviceManager::memory_status(Device device) const {
  const auto& runtime = Runtime::get();
  MemoryStatus status = runtime.allocator(device).stats();
  const auto& api = runtime.api(device);
  plugin_call<&xhal_plugin_api::mem_info>(api, "mem_get_info", device.index, &status.free, &status.total);
  return status;
}

void DeviceManager::empty_cache(Device device) { Runtime::get().allocator(device).empty_cache(); }

void DeviceManager::reset_peak_stats(Device device) { Runtime::get().allocator(device).reset_peak_stats(); }

void DeviceManager::synchronize(Device device) {
  const auto& api = Runtime::get().api(device);
  plugin_call<&xhal_plugin_api::device_synchronize>(api, "device_synchronize", device.index);
}

Stream DeviceManager::default_stream(Device device) const {
  Runtime::get().require(device);
  return Stream(device, nullptr);
}

Stream DeviceManager::current_stream(Device device) const {
  auto it = t_current_streams.find(key(device));
  return it != t_current_streams.end() ? it->second : default_stream(device);
}

void DeviceManager::set_current_stream(const Stream& stream) {
  Runtime::get().require(stream.device());
  t_current_streams[key(stream.device())] = stream;
}

Stream DeviceManager::create_stream(Device device) {
  const auto& api = Runtime::get().api(device);
  void* native = nullptr;
  plugin_call<&xhal_plugin_api::stream_create>(api, "stream_create", device.index, &native);
  const xhal_plugin_api* owner = &api;
  return Stream(device, std::shared_ptr<void>(native, [owner, device](void* s) {
                  if (s != nullptr) plugin_call_unchecked<&xhal_plugin_api::stream_destroy>(*owner, device.index, s);
                }));
}

Stream DeviceManager::wrap_stream(Device device, void* native) {
  Runtime::get().require(device);
  return Stream(device, std::shared_ptr<void>(native, [](void*) {}));
}

namespace {

// An event handle that the plugin which made it destroys with the last copy.
std::shared_ptr<void> owned_event(const xhal_plugin_api& api, Device device, void* native) {
  const xhal_plugin_api* owner = &api;
  return std::shared_ptr<void>(native, [owner, device](void* e) {
    if (e != nullptr) plugin_call_unchecked<&xhal_plugin_api::event_destroy>(*owner, device.index, e);
  });
}

}  // namespace

Event DeviceManager::create_event(Device device) {
  const auto& api = Runtime::get().api(device);
  void* native = nullptr;
  plugin_call<&xhal_plugin_api::event_create>(api, "event_create", device.index, &native);
  return Event(device, owned_event(api, device, native), false);
}

Event DeviceManager::create_timed_event(Device device) {
  const auto& api = Runtime::get().api(device);
  if (api.timed_event_create == nullptr || api.event_elapsed_ms == nullptr) {
    throw Error(Errc::unsupported,
                format_text("DeviceManager::create_timed_event: the {} backend cannot time its streams", device.str()));
  }
  void* native = nullptr;
  plugin_call<&xhal_plugin_api::timed_event_create>(api, "timed_event_create", device.index, &native);
  return Event(device, owned_event(api, device, native), true);
}

BackendInfo DeviceManager::load_plugin(const std::string& path) {
  return Runtime::get().load(path, PluginSource::explicit_path);
}

void Stream::synchronize() const {
  const auto& api = Runtime::get().api(device_);
  plugin_call<&xhal_plugin_api::stream_synchronize>(api, "stream_synchronize", device_.index, native());
}

void Event::record(const Stream& stream) {
  const auto& api = Runtime::get().api(device_);
  plugin_call<&xhal_plugin_api::event_record>(api, "event_record", device_.index, native(), stream.native());
}

bool Event::query() const {
  if (native() == nullptr) return true;
  const auto& api = Runtime::get().api(device_);
  PluginMessage message;
  const xhal_status status = plugin_status<&xhal_plugin_api::event_query>(api, message, device_.index, native());
  if (status == XHAL_NOT_READY) return false;
  if (status != XHAL_OK) throw_plugin_failure(status, "event_query", message);
  return true;
}

void Event::synchronize() const {
  const auto& api = Runtime::get().api(device_);
  plugin_call<&xhal_plugin_api::event_synchronize>(api, "event_synchronize", device_.index, native());
}

double Event::elapsed_ms(const Event& end) const {
  if (!timed_ || !end.timed_) {
    throw Error(Errc::invalid_argument,
                format_text("Event::elapsed_ms: {} event was not made by DeviceManager::create_timed_event",
                            timed_ ? "the end" : "the start"));
  }
  if (end.device_ != device_) {
    throw Error(Errc::invalid_argument, format_text("Event::elapsed_ms: the start event is on {}, the end event on {}",
                                                    device_.str(), end.device_.str()));
  }
  const auto& api = Runtime::get().api(device_);
  float ms = 0;
  plugin_call<&xhal_plugin_api::event_elapsed_ms>(api, "event_elapsed_ms", device_.index, native(), end.native(), &ms);
  return double(ms);
}

void Event::block(const Stream& stream) const {
  const auto& api = Runtime::get().api(device_);
  plugin_call<&xhal_plugin_api::stream_wait_event>(api, "stream_wait_event", device_.index, stream.native(), native());
}

}  // namespace xhal

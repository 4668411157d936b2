#include "core/backend_selection.hpp"

#include "core/backend_names.hpp"
#include "core/env.hpp"
#include "core/plugin_loader.hpp"
#include "core/runtime.hpp"
#include "core/text_format.hpp"
#include "xhal/error.hpp"

namespace xhal {
namespace {

// Why `type` cannot serve as the default, or "" when it can. `detailed` adds the search path.
std::string unavailable_reason(DeviceType type, bool detailed) {
  const std::string_view name = device_type_name(type);
  if (const BackendState* state = Runtime::get().backend(type)) {
    if (!state->properties.empty()) return "";
    return format_text("the {} plugin ({}) loaded but reports no device: {}", name, state->plugin.info.path,
                       state->plugin.info.reason);
  }
  for (const auto& record : Runtime::get().backends()) {
    if (record.name == name) {
      return format_text("the {} plugin ({}) failed to load: {}", name, record.path, record.reason);
    }
  }
  if (!detailed) return format_text("no {} plugin", name);
  return format_text("the {} plugin (libxhal_{}.so) was not found; searched: {}", name, name,
                     join_text(plugin_search_dirs(), ", "));
}

}  // namespace

DefaultDeviceChoice choose_default_device() {
  const std::string requested = env::value(env::Var::backend_type).value_or("auto");
  if (env::lower(requested) == "auto") {
    // The accelerators in code order: cuda, hip, ze, then other plugins in the order they loaded.
    std::string skipped;
    for (int code = 1; code < kMaxBackends; ++code) {
      const auto type = DeviceType(code);
      if (backend_names::name_of(type).empty()) break;
      std::string why = unavailable_reason(type, false);
      if (why.empty()) {
        return {{type, 0},
                format_text("BACKEND_TYPE=auto picked {}:0, the first accelerator with "
                            "a device{}{}",
                            device_type_name(type), skipped.empty() ? "" : "; ", skipped)};
      }
      skipped += format_text("{}{}", skipped.empty() ? "" : "; ", why);
    }
    return {Device::cpu(), format_text("BACKEND_TYPE=auto picked cpu: no accelerator ({})", skipped)};
  }
  const std::string backend = backend_names::canonical(requested);
  if (!backend_names::is_valid_name(backend)) {
    throw Error(Errc::invalid_argument,
                format_text("BACKEND_TYPE={}: not a backend name ([a-z][a-z0-9_]{{0,31}}); installed: {}; "
                            "known: {}",
                            requested, Runtime::get().installed_list(), backend_names::known_list()));
  }
  const auto type = backend_names::lookup(backend);
  if (!type) {
    for (const auto& record : Runtime::get().backends()) {
      if (record.name == backend) {
        throw Error(Errc::backend_unavailable, format_text("BACKEND_TYPE={}: the {} plugin ({}) failed to load: {}",
                                                           requested, backend, record.path, record.reason));
      }
    }
    throw Error(Errc::backend_unavailable,
                format_text("BACKEND_TYPE={}: no plugin for backend '{}' is installed (libxhal_{}.so; searched: "
                            "{}); installed: {}; known: {}",
                            requested, backend, backend, join_text(plugin_search_dirs(), ", "),
                            Runtime::get().installed_list(), backend_names::known_list()));
  }
  if (std::string why = unavailable_reason(*type, true); !why.empty()) {
    throw Error(Errc::backend_unavailable, format_text("BACKEND_TYPE={}: {}", requested, why));
  }
  return {{*type, 0}, format_text("BACKEND_TYPE={} selects {}", requested, Device{*type, 0}.str())};
}

}  // namespace xhal

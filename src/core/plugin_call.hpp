// Calling a plugin's members the one way the ABI defines: the plugin instance first, a message
// buffer last, and a failure turned into an xhal::Error that names the call and quotes the plugin.
#pragma once

#include <string_view>

#include "xhal/plugin.h"

namespace xhal {

// The buffer a plugin writes its failure message to.
struct PluginMessage {
  char text[512] = "";
};

// Calls api.*Member(self, args..., message) and returns its status.
template <auto Member, class... Args>
xhal_status plugin_status(const xhal_plugin_api& api, PluginMessage& message, Args... args) {
  const xhal_status status = (api.*Member)(api.self, args..., message.text, sizeof message.text);
  message.text[sizeof message.text - 1] = '\0';
  return status;
}

// Throws Error(status) "<what> failed: <message>"; XHAL_NOT_READY counts as internal.
[[noreturn]] void throw_plugin_failure(xhal_status status, std::string_view what, const PluginMessage& message);

// Calls the member and throws on any status but XHAL_OK.
template <auto Member, class... Args>
void plugin_call(const xhal_plugin_api& api, std::string_view what, Args... args) {
  PluginMessage message;
  const xhal_status status = plugin_status<Member>(api, message, args...);
  if (status != XHAL_OK) throw_plugin_failure(status, what, message);
}

// Calls a member whose failure the caller can do nothing about (a destroy run by a destructor).
template <auto Member, class... Args>
void plugin_call_unchecked(const xhal_plugin_api& api, Args... args) {
  PluginMessage message;
  (void)plugin_status<Member>(api, message, args...);
}

}  // namespace xhal

// The xhal_host_api table the core hands to each plugin: kernel registration, logging, scratch
// memory from the core's caching allocator.
#pragma once

#include "xhal/plugin.h"

namespace xhal {

struct PluginHostContext;

xhal_host_api make_host_api(PluginHostContext* context);
// Registers the kernels a plugin registered during a successful init.
void commit_pending_kernels(PluginHostContext& context);

}  // namespace xhal

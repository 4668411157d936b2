#include "core/host_api.hpp"

#include "core/logging.hpp"
#include "core/plugin_loader.hpp"
#include "core/registry.hpp"
#include "core/runtime.hpp"
#include "xhal/error.hpp"

namespace xhal {
namespace {

xhal_status register_kernel(void* ctx, const xhal_kernel_desc* desc) {
  auto* context = static_cast<PluginHostContext*>(ctx);
  if (desc == nullptr || desc->name == nullptr || desc->run == nullptr ||
      desc->struct_size < sizeof(xhal_kernel_desc)) {
    return XHAL_ERR_INVALID_ARGUMENT;
  }
  if (!context->committed) {
    context->pending.push_back(*desc);
    context->pending_names.emplace_back(desc->name);
    return XHAL_OK;
  }
  try {
    Registry::get().add(context->type, *desc);
    return XHAL_OK;
  } catch (const Error& e) {
    return static_cast<xhal_status>(e.code());
  }
}

void log_message(void*, int level, const char* msg) {
  static constexpr spdlog::level::level_enum kLevels[] = {
      spdlog::level::debug, spdlog::level::info, spdlog::level::warn, spdlog::level::err};
  log().log(kLevels[level < 0 ? 0 : level > 3 ? 3 : level], "{}", msg ? msg : "");
}

xhal_status scratch_alloc(void* ctx, int32_t device, size_t bytes, void* stream, void** ptr) {
  auto* context = static_cast<PluginHostContext*>(ctx);
  try {
    *ptr = Runtime::get().allocator({context->type, device}).allocate(bytes, stream);
    return XHAL_OK;
  } catch (const Error& e) {
    return static_cast<xhal_status>(e.code());
  }
}

void scratch_free(void* ctx, int32_t device, void* ptr) {
  auto* context = static_cast<PluginHostContext*>(ctx);
  Runtime::get().allocator({context->type, device}).deallocate(ptr);
}

}  // namespace

xhal_host_api make_host_api(PluginHostContext* context) {
  xhal_host_api host{};
  host.abi_version = XHAL_PLUGIN_ABI_VERSION;
  host.struct_size = sizeof(xhal_host_api);
  host.ctx = context;
  host.register_kernel = register_kernel;
  host.log = log_message;
  host.scratch_alloc = scratch_alloc;
  host.scratch_free = scratch_free;
  return host;
}

void commit_pending_kernels(PluginHostContext& context) {
  for (size_t i = 0; i < context.pending.size(); ++i) {
    xhal_kernel_desc desc = context.pending[i];
    desc.name = context.pending_names[i].c_str();
    try {
      Registry::get().add(context.type, desc);
    } catch (const Error& e) {
      log().warn("kernel {} of the {} plugin not registered: {}", desc.name,
                 device_type_name(context.type), e.what());
    }
  }
  context.pending.clear();
  context.pending_names.clear();
  context.committed = true;
}

}  // namespace xhal

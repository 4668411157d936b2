#include "core/host_api.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>

#include "core/logging.hpp"
#include "core/registry.hpp"
#include "core/text_format.hpp"
#include "xhal/error.hpp"

namespace xhal {
namespace {

xhal_status write_message(char* msg, size_t len, xhal_status status, const std::string& text) {
  if (msg != nullptr && len > 0) std::snprintf(msg, len, "%s", text.c_str());
  return status;
}

xhal_status register_kernel(void* ctx, const xhal_kernel_desc* desc, char* msg, size_t len) {
  auto* context = static_cast<PluginHostContext*>(ctx);
  // Descriptors grow at their end: one from a newer plugin is read up to what this core knows.
  constexpr size_t kMinSize = offsetof(xhal_kernel_desc, run) + sizeof(xhal_kernel_run_fn);
  if (desc == nullptr || desc->struct_size < kMinSize) {
    return write_message(msg, len, XHAL_ERR_INVALID_ARGUMENT,
                         format_text("register_kernel: expected a descriptor of struct_size >= {}, got {}", kMinSize,
                                     desc == nullptr ? std::string("NULL") : format_text("{}", desc->struct_size)));
  }
  xhal_kernel_desc copy{};
  std::memcpy(&copy, desc, std::min<size_t>(desc->struct_size, sizeof copy));
  copy.struct_size = sizeof copy;
  desc = &copy;
  if (desc->name == nullptr || desc->run == nullptr) {
    return write_message(msg, len, XHAL_ERR_INVALID_ARGUMENT,
                         format_text("register_kernel: kernel '{}' has no {}", desc->name ? desc->name : "(unnamed)",
                                     desc->name ? "run()" : "name"));
  }
  if (!context->committed) {
    context->pending.push_back(*desc);
    context->pending_names.emplace_back(desc->name);
    return XHAL_OK;
  }
  try {
    context->registry->add(context->type, *desc);
    return XHAL_OK;
  } catch (const Error& e) {
    return write_message(msg, len, static_cast<xhal_status>(e.code()), e.what());
  }
}

void log_message(void*, xhal_log_level level, const char* msg) {
  static constexpr LogLevel kLevels[] = {LogLevel::debug, LogLevel::info, LogLevel::warn, LogLevel::error};
  log_text(kLevels[int(level) < 0 ? 0 : int(level) > 3 ? 3 : int(level)], msg ? msg : "");
}

xhal_status scratch_alloc(void* ctx, int32_t device, size_t bytes, void* stream, void** ptr, char* msg, size_t len) {
  auto* context = static_cast<PluginHostContext*>(ctx);
  if (context->allocators == nullptr || device < 0 || size_t(device) >= context->allocators->size()) {
    return write_message(
        msg, len, XHAL_ERR_INVALID_ARGUMENT,
        format_text("scratch_alloc: the {} backend has no device {}", device_type_name(context->type), device));
  }
  try {
    *ptr = (*context->allocators)[size_t(device)]->allocate(bytes, stream);
    return XHAL_OK;
  } catch (const Error& e) {
    return write_message(msg, len, static_cast<xhal_status>(e.code()), e.what());
  } catch (const std::bad_alloc&) {
    return write_message(msg, len, XHAL_ERR_OUT_OF_MEMORY, "host memory exhausted");
  }
}

void scratch_free(void* ctx, int32_t device, void* ptr) {
  auto* context = static_cast<PluginHostContext*>(ctx);
  if (context->allocators == nullptr || device < 0 || size_t(device) >= context->allocators->size()) return;
  (*context->allocators)[size_t(device)]->deallocate(ptr);
}

xhal_status dispatch(void* ctx, const xhal_op_call* call, char* msg, size_t len) {
  auto* context = static_cast<PluginHostContext*>(ctx);
  if (call == nullptr || call->op < 0 || call->op >= XHAL_OP_COUNT || kernel_dtype_index(call->dtype) < 0 ||
      call->host == nullptr) {
    return write_message(msg, len, XHAL_ERR_INVALID_ARGUMENT,
                         "dispatch: expected a call with a known op, a kernel dtype and the host API");
  }
  try {
    context->registry->dispatch(context->type, *call);
    return XHAL_OK;
  } catch (const Error& e) {
    return write_message(msg, len, static_cast<xhal_status>(e.code()), e.what());
  } catch (const std::bad_alloc&) {
    return write_message(msg, len, XHAL_ERR_OUT_OF_MEMORY, "host memory exhausted");
  }
}

}  // namespace

xhal_host_api make_host_api(PluginHostContext* context) {
  xhal_host_api host{};
  host.struct_size = sizeof(xhal_host_api);
  host.abi_version = XHAL_PLUGIN_ABI_VERSION;
  host.ctx = context;
  host.register_kernel = register_kernel;
  host.log = log_message;
  host.scratch_alloc = scratch_alloc;
  host.scratch_free = scratch_free;
  host.dispatch = dispatch;
  return host;
}

void commit_pending_kernels(PluginHostContext& context) {
  for (size_t i = 0; i < context.pending.size(); ++i) {
    xhal_kernel_desc desc = context.pending[i];
    desc.name = context.pending_names[i].c_str();
    try {
      context.registry->add(context.type, desc);
    } catch (const Error& e) {
      log(LogLevel::warn, "kernel {} of the {} plugin not registered: {}", desc.name, device_type_name(context.type),
          e.what());
    }
  }
  context.pending.clear();
  context.pending_names.clear();
  context.committed = true;
}

}  // namespace xhal

#include "ops/op_call.hpp"

#include "core/op_table.hpp"
#include "core/registry.hpp"
#include "core/runtime.hpp"
#include "core/instrumentation.hpp"
#include "core/instrumented_dispatch.hpp"
#include "core/text_format.hpp"
#include "xhal/device_manager.hpp"
#include "xhal/error.hpp"

namespace xhal::ops {

OpCall::OpCall(Op op, DType dtype, Device device, const Stream* stream, int64_t entries) : device_(device) {
  const BackendState* backend = nullptr;
  try {
    backend = &Runtime::get().require(device);
  } catch (const Error& e) {
    throw Error(e.code(), format_text("xhal::ops::{}: argument 'out': {}", op_name(op), e.what()));
  }
  if (stream != nullptr && !(stream->device() == device)) {
    throw Error(Errc::invalid_argument,
                format_text("xhal::ops::{}: argument 'stream': expected a stream of {} (the output's "
                            "device), got one of {}",
                            op_name(op), device.str(), stream->device().str()));
  }
  call_.struct_size = sizeof call_;
  call_.op = static_cast<xhal_op>(op);
  call_.dtype = static_cast<xhal_dtype>(dtype);
  call_.device = device.index;
  call_.num_tensors = op_num_tensors(op);
  call_.tensors = tensor_pointers_.data();
  const ListLayout list = op_list(op);
  if (list.is_list()) list_stride_ = list.stride;
  if (entries != 1) {
    // The front end checked the list; what a call can carry bounds it.
    int64_t count = 0;
    if (!list.is_list() || entries < 1 || __builtin_mul_overflow(entries, int64_t(list.stride), &count) ||
        count > int64_t(UINT32_MAX) - list.first) {
      throw Error(Errc::invalid_argument,
                  format_text("xhal::ops::{}: a list of {} entries (at most {})", op_name(op), entries,
                              list.is_list() ? (int64_t(UINT32_MAX) - list.first) / list.stride : 1));
    }
    call_.num_tensors = uint32_t(list.first + count);
    list_tensors_.resize(call_.num_tensors);
    list_pointers_.assign(call_.num_tensors, nullptr);
    call_.tensors = list_pointers_.data();
  }
  call_.stream = stream ? stream->native() : DeviceManager::instance().current_stream(device).native();
  call_.host = &backend->plugin.context->host;
  call_.flags = Runtime::get().registry().deterministic() ? XHAL_CALL_DETERMINISTIC : 0;
}

void OpCall::set(int slot, int64_t entry, const TensorView& view) {
  const auto i = size_t(XHAL_LIST_SLOT(int64_t(slot), entry, int64_t(list_stride_)));
  if (list_pointers_.empty()) {
    tensors_[i] = view.to_dlpack();
    tensor_pointers_[i] = &tensors_[i];
  } else {
    list_tensors_[i] = view.to_dlpack();
    list_pointers_[i] = &list_tensors_[i];
  }
}

void OpCall::run() {
  if (instrumentation::any()) return run_instrumented(call_, device_);  // check, trace
  Runtime::get().registry().dispatch(device_.type, call_);
}

}  // namespace xhal::ops

#include "ops/op_call.hpp"

#include <fmt/format.h>

#include "core/op_table.hpp"
#include "core/registry.hpp"
#include "core/runtime.hpp"
#include "core/instrumentation.hpp"
#include "core/instrumented_dispatch.hpp"
#include "xhal/device_manager.hpp"
#include "xhal/error.hpp"

namespace xhal::ops {

OpCall::OpCall(Op op, DType dtype, Device device, const Stream* stream) : device_(device) {
  const BackendState* backend = nullptr;
  try {
    backend = &Runtime::get().require(device);
  } catch (const Error& e) {
    throw Error(e.code(), fmt::format("xhal::ops::{}: argument 'out': {}", op_name(op), e.what()));
  }
  if (stream != nullptr && !(stream->device() == device)) {
    throw Error(Errc::invalid_argument,
                fmt::format("xhal::ops::{}: argument 'stream': expected a stream of {} (the output's "
                            "device), got one of {}",
                            op_name(op), device.str(), stream->device().str()));
  }
  call_.struct_size = sizeof call_;
  call_.op = static_cast<xhal_op>(op);
  call_.dtype = static_cast<xhal_dtype>(dtype);
  call_.device = device.index;
  call_.num_tensors = op_num_tensors(op);
  call_.tensors = tensor_pointers_.data();
  call_.stream = stream ? stream->native() : DeviceManager::instance().current_stream(device).native();
  call_.host = &backend->plugin.context->host;
  call_.flags = Runtime::get().registry().deterministic() ? XHAL_CALL_DETERMINISTIC : 0;
}

void OpCall::set(int slot, const TensorView& view) {
  tensors_[size_t(slot)] = view.to_dlpack();
  tensor_pointers_[size_t(slot)] = &tensors_[size_t(slot)];
}

void OpCall::run() {
  if (instrumentation::any()) return run_instrumented(call_, device_);  // check, trace
  Runtime::get().registry().dispatch(device_.type, call_);
}

}  // namespace xhal::ops

#include "xhal/tensor.hpp"

#include <utility>
#include <vector>

#include "core/runtime.hpp"
#include "core/text_format.hpp"
#include "xhal/device_manager.hpp"
#include "xhal/error.hpp"

namespace xhal {

Tensor Tensor::empty(const std::vector<int64_t>& shape, DType dtype, Device device, const Stream* stream) {
  Tensor t;
  t.view_ = TensorView(nullptr, dtype, shape, device);
  CachingAllocator& allocator = Runtime::get().allocator(device);
  void* native = stream ? stream->native() : DeviceManager::instance().current_stream(device).native();
  void* ptr = allocator.allocate(t.view_.nbytes(), native);
  t.storage_ = std::shared_ptr<void>(ptr, [&allocator](void* p) { allocator.deallocate(p); });
  t.view_ = TensorView(ptr, dtype, shape, device);
  return t;
}

Tensor Tensor::from_host(const void* host, const std::vector<int64_t>& shape, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.copy_from_host(host);
  return t;
}

void Tensor::copy_from_host(const void* host) {
  const std::vector<int64_t> shape(view_.shape().begin(), view_.shape().end());
  copy(view_, TensorView(const_cast<void*>(host), dtype(), shape, Device::cpu()));
}

void Tensor::copy_to_host(void* host) const {
  const std::vector<int64_t> shape(view_.shape().begin(), view_.shape().end());
  copy(TensorView(host, dtype(), shape, Device::cpu()), view_);
}

Tensor Tensor::to(Device device) const {
  const std::vector<int64_t> shape(view_.shape().begin(), view_.shape().end());
  Tensor out = empty(shape, dtype(), device);
  copy(out, view_);
  return out;
}

namespace {

// The checks both copies make: one dtype and shape, contiguous, data behind non-empty views.
// Returns the bytes to copy.
size_t checked_copy_bytes(const TensorView& dst, const TensorView& src, const char* function) {
  if (dst.dtype() != src.dtype() ||
      !std::equal(dst.shape().begin(), dst.shape().end(), src.shape().begin(), src.shape().end())) {
    throw Error(Errc::invalid_argument, format_text("{}: dst and src differ in dtype or shape ({} vs {})", function,
                                                    dtype_name(dst.dtype()), dtype_name(src.dtype())));
  }
  if (!dst.is_contiguous() || !src.is_contiguous()) {
    throw Error(Errc::invalid_argument, format_text("{}: both views must be contiguous", function));
  }
  const size_t bytes = dst.nbytes();
  for (const auto& [name, view] : {std::pair{"dst", &dst}, std::pair{"src", &src}}) {
    if (bytes != 0 && view->data() == nullptr) {
      throw Error(
          Errc::invalid_argument,
          format_text("{}: argument '{}': expected data for {} bytes, got a null pointer", function, name, bytes));
    }
  }
  return bytes;
}

}  // namespace

void copy_async(const TensorView& dst, const TensorView& src, const Stream& stream) {
  const size_t bytes = checked_copy_bytes(dst, src, "xhal::copy_async");
  if (!(dst.device() == src.device()) || !(stream.device() == dst.device())) {
    throw Error(Errc::invalid_argument,
                format_text("xhal::copy_async: dst, src and the stream must be on one device (dst on {}, src on {}, "
                            "stream on {}); xhal::copy copies between devices",
                            dst.device().str(), src.device().str(), stream.device().str()));
  }
  if (bytes == 0) return;
  const auto& api = Runtime::get().api(dst.device());
  plugin_call<&xhal_plugin_api::mem_copy>(api, "memcpy", dst.device().index, dst.data(), src.data(), bytes,
                                          XHAL_COPY_DEVICE_TO_DEVICE, stream.native());
}

void copy(const TensorView& dst, const TensorView& src) {
  const size_t bytes = checked_copy_bytes(dst, src, "xhal::copy");
  if (bytes == 0) return;
  const bool dst_host = dst.device().type == DeviceType::cpu;
  const bool src_host = src.device().type == DeviceType::cpu;
  if (dst_host && src_host) {  // the cpu plugin's copy, which spreads large copies over its threads
    const auto& api = Runtime::get().api(Device::cpu());
    plugin_call<&xhal_plugin_api::mem_copy>(api, "memcpy", 0, dst.data(), src.data(), bytes, XHAL_COPY_DEVICE_TO_DEVICE,
                                            nullptr);
    return;
  }
  if (!dst_host && !src_host && !(dst.device() == src.device())) {
    std::vector<char> staging(bytes);  // between two accelerators: through the host
    copy(TensorView(staging.data(), src.dtype(), {int64_t(bytes / dtype_size(src.dtype()))}),
         TensorView(src.data(), src.dtype(), {int64_t(bytes / dtype_size(src.dtype()))}, src.device()));
    copy(TensorView(dst.data(), dst.dtype(), {int64_t(bytes / dtype_size(dst.dtype()))}, dst.device()),
         TensorView(staging.data(), src.dtype(), {int64_t(bytes / dtype_size(src.dtype()))}));
    return;
  }
  const Device device = dst_host ? src.device() : dst.device();
  const auto& api = Runtime::get().api(device);
  const xhal_copy_kind kind = dst_host   ? XHAL_COPY_DEVICE_TO_HOST
                              : src_host ? XHAL_COPY_HOST_TO_DEVICE
                                         : XHAL_COPY_DEVICE_TO_DEVICE;
  plugin_call<&xhal_plugin_api::mem_copy>(api, "memcpy", device.index, dst.data(), src.data(), bytes, kind, nullptr);
  plugin_call<&xhal_plugin_api::device_synchronize>(api, "device_synchronize", device.index);
}

}  // namespace xhal

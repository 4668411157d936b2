// The device side of toyaccel: one device whose memory comes from toyaccel::Device's allocator.
// Work runs when it is issued, so streams are tokens and events are always complete (NULL).
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "toy_accel.hpp"

namespace toyaccel {

xhal_status Device::allocate(size_t bytes, void** ptr, char* msg, size_t msg_len) {
  std::lock_guard lock(mutex_);
  if (bytes > kCapacity - used_) {
    std::snprintf(msg, msg_len, "toyaccel: %zu bytes requested, %zu of %zu free", bytes, kCapacity - used_, kCapacity);
    return XHAL_ERR_OUT_OF_MEMORY;
  }
  *ptr = std::malloc(bytes == 0 ? 1 : bytes);
  if (*ptr == nullptr) {
    std::snprintf(msg, msg_len, "toyaccel: the host has no %zu bytes for the device", bytes);
    return XHAL_ERR_OUT_OF_MEMORY;
  }
  blocks_[*ptr] = bytes;
  used_ += bytes;
  return XHAL_OK;
}

xhal_status Device::release(void* ptr, char* msg, size_t msg_len) {
  std::lock_guard lock(mutex_);
  const auto it = blocks_.find(ptr);
  if (it == blocks_.end()) {
    std::snprintf(msg, msg_len, "toyaccel: %p was not allocated here", ptr);
    return XHAL_ERR_INVALID_ARGUMENT;
  }
  used_ -= it->second;
  blocks_.erase(it);
  std::free(ptr);
  return XHAL_OK;
}

size_t Device::used() const {
  std::lock_guard lock(mutex_);
  return used_;
}

namespace {

Device& device_of(void* self) { return *static_cast<Device*>(self); }

xhal_status check_device(int32_t device, char* msg, size_t len) {
  if (device == 0) return XHAL_OK;
  std::snprintf(msg, len, "toyaccel has one device (index 0), not %d", int(device));
  return XHAL_ERR_INVALID_ARGUMENT;
}

int32_t device_count(void*, char*, size_t) { return 1; }

xhal_status query_int(void*, int32_t device, xhal_query key, int64_t* value, char* msg, size_t len) {
  if (xhal_status s = check_device(device, msg, len); s != XHAL_OK) return s;
  switch (key) {
    case XHAL_QUERY_TOTAL_MEMORY: *value = int64_t(Device::kCapacity); return XHAL_OK;
    case XHAL_QUERY_COMPUTE_UNITS: *value = 1; return XHAL_OK;
    case XHAL_QUERY_WARP_SIZE: *value = 1; return XHAL_OK;
    default:
      std::snprintf(msg, len, "toyaccel does not know integer property %d", int(key));
      return XHAL_ERR_UNSUPPORTED;
  }
}

xhal_status query_text(void*, int32_t device, xhal_query key, char* value, size_t value_len, char* msg, size_t len) {
  if (xhal_status s = check_device(device, msg, len); s != XHAL_OK) return s;
  switch (key) {
    case XHAL_QUERY_NAME: std::snprintf(value, value_len, "Toy Accelerator"); return XHAL_OK;
    case XHAL_QUERY_ARCH: std::snprintf(value, value_len, "toy1"); return XHAL_OK;
    default: std::snprintf(msg, len, "toyaccel does not know text property %d", int(key)); return XHAL_ERR_UNSUPPORTED;
  }
}

xhal_status mem_info(void* self, int32_t device, size_t* free_bytes, size_t* total_bytes, char* msg, size_t len) {
  if (xhal_status s = check_device(device, msg, len); s != XHAL_OK) return s;
  *total_bytes = Device::kCapacity;
  *free_bytes = Device::kCapacity - device_of(self).used();
  return XHAL_OK;
}

xhal_status mem_alloc(void* self, int32_t device, size_t bytes, void** ptr, char* msg, size_t len) {
  if (xhal_status s = check_device(device, msg, len); s != XHAL_OK) return s;
  return device_of(self).allocate(bytes, ptr, msg, len);
}

xhal_status mem_release(void* self, int32_t device, void* ptr, char* msg, size_t len) {
  if (xhal_status s = check_device(device, msg, len); s != XHAL_OK) return s;
  return device_of(self).release(ptr, msg, len);
}

xhal_status mem_copy(void*, int32_t device, void* dst, const void* src, size_t bytes, xhal_copy_kind, void*, char* msg,
                     size_t len) {
  if (xhal_status s = check_device(device, msg, len); s != XHAL_OK) return s;
  if (bytes != 0) std::memmove(dst, src, bytes);
  return XHAL_OK;
}

// A stream is a token: work issued on it has finished when the call returns.
xhal_status stream_create(void*, int32_t device, void** stream, char* msg, size_t len) {
  if (xhal_status s = check_device(device, msg, len); s != XHAL_OK) return s;
  *stream = std::malloc(1);
  return *stream != nullptr ? XHAL_OK : XHAL_ERR_OUT_OF_MEMORY;
}

xhal_status stream_destroy(void*, int32_t, void* stream, char*, size_t) {
  std::free(stream);
  return XHAL_OK;
}

xhal_status stream_synchronize(void*, int32_t device, void*, char* msg, size_t len) {
  return check_device(device, msg, len);
}

xhal_status device_synchronize(void*, int32_t device, char* msg, size_t len) { return check_device(device, msg, len); }

// Events are NULL, which plugin.h defines as always complete.
xhal_status event_create(void*, int32_t device, void** event, char* msg, size_t len) {
  *event = nullptr;
  return check_device(device, msg, len);
}

xhal_status event_done(void*, int32_t, void*, char*, size_t) { return XHAL_OK; }

xhal_status event_pair_done(void*, int32_t, void*, void*, char*, size_t) { return XHAL_OK; }

}  // namespace

void fill_device_table(xhal_plugin_api* api) {
  api->device_count = device_count;
  api->query_int = query_int;
  api->query_text = query_text;
  api->mem_info = mem_info;
  api->mem_alloc = mem_alloc;
  api->mem_release = mem_release;
  api->mem_copy = mem_copy;
  api->stream_create = stream_create;
  api->stream_destroy = stream_destroy;
  api->stream_synchronize = stream_synchronize;
  api->device_synchronize = device_synchronize;
  api->event_create = event_create;
  api->event_destroy = event_done;
  api->event_record = event_pair_done;
  api->event_query = event_done;
  api->event_synchronize = event_done;
  api->stream_wait_event = event_pair_done;
}

}  // namespace toyaccel

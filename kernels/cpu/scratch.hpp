// Scratch memory for a CPU kernel from the core's allocator (counted against XHAL_MEMORY_LIMIT like
// any other), freed at scope exit; get() is null when the allocator had none to give.
#pragma once

#include <cstddef>

#include "xhal/plugin.h"

namespace xhal::cpu {

class Scratch {
 public:
  Scratch(const xhal_op_call* c, size_t bytes) : c_(c) {
    if (c->host->scratch_alloc(c->host->ctx, c->device_index, bytes, c->stream, &ptr_) != XHAL_OK) ptr_ = nullptr;
  }
  ~Scratch() {
    if (ptr_ != nullptr) c_->host->scratch_free(c_->host->ctx, c_->device_index, ptr_);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  float* get() const { return static_cast<float*>(ptr_); }
  void* data() const { return ptr_; }

 private:
  const xhal_op_call* c_;
  void* ptr_ = nullptr;
};

}  // namespace xhal::cpu

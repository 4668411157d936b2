// Scratch memory for CPU kernels from the core's allocator (counted against XHAL_MEMORY_LIMIT like
// any other, released by empty_cache), freed at scope exit: never thread-local buffers that outlive
// the call. Sizes are overflow-checked; a size that overflows or that the allocator refuses leaves
// the scratch empty (data() null), which the kernel reports as out of memory.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/kernel_registration.hpp"
#include "xhal/plugin.h"

namespace xhal::cpu {

// The out_of_memory error of a kernel of `op` whose scratch the allocator refused; bytes_each:
// what one thread needed (-1: the size overflowed; 0: not known where the error is made).
inline xhal_status workspaces_refused(char* msg, size_t len, const char* op, int64_t bytes_each = 0) {
  if (bytes_each == 0) {
    return kernels::kernel_error(msg, len, XHAL_ERR_OUT_OF_MEMORY, "%s: no memory for the kernel's workspaces", op);
  }
  if (bytes_each < 0) {
    return kernels::kernel_error(msg, len, XHAL_ERR_OUT_OF_MEMORY,
                                 "%s: no memory for the kernel's workspaces (their size overflows)", op);
  }
  return kernels::kernel_error(msg, len, XHAL_ERR_OUT_OF_MEMORY,
                               "%s: no memory for the kernel's workspaces (%lld bytes per thread)", op,
                               (long long)bytes_each);
}

// count * element bytes, or -1 when that overflows (or count < 0).
inline int64_t checked_bytes(int64_t count, int64_t element) {
  int64_t bytes = 0;
  return count < 0 || __builtin_mul_overflow(count, element, &bytes) ? -1 : bytes;
}

// Bytes of a rows x cols f32 matrix, at least one float (an empty matrix still gets a buffer, so
// that a null one means refused), or -1 when the size overflows.
inline int64_t matrix_bytes(int64_t rows, int64_t cols) {
  const int64_t count = checked_bytes(rows, cols);
  return count < 0 ? -1 : checked_bytes(std::max<int64_t>(count, 1), sizeof(float));
}

class Scratch {
 public:
  // `bytes` < 0 (an overflowed size) is refused like an allocation the allocator cannot make.
  // The allocator's message is dropped: the kernel reports the refusal in its own words.
  Scratch(const xhal_op_call* c, int64_t bytes) : c_(c) {
    char refusal[256];
    if (bytes < 0 || c->host->scratch_alloc(c->host->ctx, c->device, size_t(bytes), c->stream, &ptr_, refusal,
                                            sizeof refusal) != XHAL_OK) {
      ptr_ = nullptr;
    }
  }
  ~Scratch() {
    if (ptr_ != nullptr) c_->host->scratch_free(c_->host->ctx, c_->device, ptr_);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  float* get() const { return static_cast<float*>(ptr_); }
  void* data() const { return ptr_; }

 private:
  const xhal_op_call* c_;
  void* ptr_ = nullptr;
};

// Carves typed arrays, each 64-byte aligned, out of one buffer; with a null buffer it only adds up
// the bytes the same requests need (bytes(), -1 once a size overflowed). Workspaces describe their
// layout once as a function of a Carver, run first to size them and then to place them.
class Carver {
 public:
  explicit Carver(void* base = nullptr) : base_(static_cast<char*>(base)) {}
  template <class T>
  T* take(int64_t count) {
    const int64_t bytes = checked_bytes(count, int64_t(sizeof(T)));
    int64_t rounded = 0, end = 0;
    if (offset_ < 0 || bytes < 0 || __builtin_add_overflow(bytes, 63, &rounded) ||
        __builtin_add_overflow(offset_, rounded / 64 * 64, &end)) {
      offset_ = -1;
      return nullptr;
    }
    T* p = base_ == nullptr ? nullptr : reinterpret_cast<T*>(base_ + offset_);
    offset_ = end;
    return p;
  }
  // rows * cols elements, the product overflow-checked too.
  template <class T>
  T* take(int64_t rows, int64_t cols) {
    int64_t count = 0;
    return take<T>(rows < 0 || cols < 0 || __builtin_mul_overflow(rows, cols, &count) ? -1 : count);
  }
  int64_t bytes() const { return offset_; }

 private:
  char* base_;
  int64_t offset_ = 0;
};

// One workspace of `bytes_each` per thread of a parallel region that runs `tasks` tasks: as many
// threads as there are tasks, up to OpenMP's count. Empty (ok() false) when the allocator refused.
class ThreadWorkspaces {
 public:
  ThreadWorkspaces(const xhal_op_call* c, int64_t bytes_each, int64_t tasks)
      : threads_(int(std::clamp<int64_t>(tasks, 1, omp_get_max_threads()))),
        stride_(bytes_each < 0 || bytes_each > INT64_MAX - 63 ? -1 : (bytes_each + 63) / 64 * 64),
        scratch_(c, checked_bytes(threads_, stride_)) {}
  bool ok() const { return scratch_.data() != nullptr || stride_ == 0; }
  int threads() const { return threads_; }
  // The calling thread's workspace (inside the region, whose thread count is threads()).
  void* of_this_thread() const { return static_cast<char*>(scratch_.data()) + stride_ * omp_get_thread_num(); }
  int64_t bytes_each() const { return stride_; }

 private:
  int threads_;
  int64_t stride_;
  Scratch scratch_;
};

}  // namespace xhal::cpu

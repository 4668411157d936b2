// Exceptions must not leave an OpenMP region: the runtime would terminate the process. A region's
// work runs through capture(), which keeps the first exception (and skips the work of later
// calls); rethrow() after the region hands it to the kernel's guard (kernels/kernel_registration.hpp),
// which returns it as the op's status.
#pragma once

#include <atomic>
#include <exception>
#include <mutex>

namespace xhal::cpu {

class RegionErrors {
 public:
  template <class Work>
  void capture(Work&& work) noexcept {
    if (failed_.load(std::memory_order_relaxed)) return;
    try {
      work();
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!first_) first_ = std::current_exception();
      failed_.store(true, std::memory_order_relaxed);
    }
  }
  void rethrow() const {
    if (first_) std::rethrow_exception(first_);
  }

 private:
  std::mutex mutex_;
  std::exception_ptr first_;
  std::atomic<bool> failed_{false};
};

}  // namespace xhal::cpu

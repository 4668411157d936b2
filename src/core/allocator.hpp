// The caching allocator of one device. Thread-safe (one mutex per device).
//
// Requests are rounded up to 512 bytes. Requests up to 1 MiB come from 2 MiB segments (the small
// pool), larger ones from segments rounded up to 2 MiB (the large pool); a free block larger than
// needed is split and neighbours are merged again on free. A freed block is reused at once on the
// stream it was used on; on another stream only after an event recorded at free time has completed.
// When the driver (or XHAL_MEMORY_LIMIT) refuses a segment, the allocator releases its unused cached
// segments and retries once, then throws OutOfMemoryError. Direct mode (XHAL_ALLOCATOR=direct)
// passes every request to the driver.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "xhal/device.hpp"
#include "xhal/device_manager.hpp"
#include "xhal/plugin.h"

namespace xhal {

struct AllocatorConfig {
  bool direct = false;
  size_t memory_limit = 0;  // 0 = none
  // Fault injection (XHAL_FAULT_ALLOC=N): the N-th allocation of the process, counted over every
  // device, fails as out of memory and the ones after it succeed again. 0 = none.
  int64_t fail_allocation = 0;
};

class CachingAllocator {
 public:
  CachingAllocator(Device device, const xhal_plugin_api& api, AllocatorConfig config);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // Never returns NULL for bytes > 0; bytes == 0 returns NULL.
  void* allocate(size_t bytes, void* stream);
  void deallocate(void* ptr);
  void empty_cache();
  void reset_peak_stats();
  MemoryStatus stats() const;  // without the driver's free/total

  static constexpr size_t kRound = 512;
  static constexpr size_t kSmallRequest = size_t(1) << 20;
  static constexpr size_t kSegment = size_t(2) << 20;
  static constexpr size_t kMaxRequest = size_t(1) << 62;  // far above any device; rounding cannot wrap

 private:
  struct Block {
    char* ptr = nullptr;
    size_t size = 0;
    void* stream = nullptr;  // the stream it was allocated for
    void* event = nullptr;  // recorded when freed for reuse on other streams; NULL = ready
    bool allocated = false;
    bool small = false;
    Block* prev = nullptr;  // neighbours within the same segment
    Block* next = nullptr;
  };
  struct BySize {
    bool operator()(const Block* a, const Block* b) const {
      return a->size != b->size ? a->size < b->size : a->ptr < b->ptr;
    }
  };
  using Pool = std::set<Block*, BySize>;

  Block* find_free(Pool& pool, size_t size, void* stream);
  bool ready_for(Block* block, void* stream);
  Block* new_segment(size_t size, bool small, void* stream);
  void release_cached_segments();
  void free_block(Block* block);
  void clear_event(Block* block);
  [[noreturn]] void throw_oom(size_t request, const char* driver_message);

  Device device_;
  const xhal_plugin_api& api_;
  AllocatorConfig config_;
  mutable std::mutex mutex_;
  Pool small_pool_, large_pool_;
  std::map<void*, Block*> live_;  // allocated blocks by pointer
  MemoryStatus stats_;
  std::string driver_message_;  // the plugin's message for the last allocation it refused
};

}  // namespace xhal

#include "core/allocator.hpp"

#include <atomic>

#include "core/logging.hpp"
#include "core/plugin_call.hpp"
#include "core/text_format.hpp"
#include "xhal/error.hpp"

namespace xhal {
namespace {

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

std::string mib(size_t bytes) { return format_text("{:.1f} MiB", double(bytes) / (1 << 20)); }

}  // namespace

CachingAllocator::CachingAllocator(Device device, const xhal_plugin_api& api, AllocatorConfig config)
    : device_(device), api_(api), config_(config) {}

CachingAllocator::~CachingAllocator() {
  // Memory still allocated belongs to tensors outliving the runtime; leave it to the driver.
  std::lock_guard lock(mutex_);
  release_cached_segments();
}

void* CachingAllocator::allocate(size_t bytes, void* stream) {
  if (bytes == 0) return nullptr;
  static std::atomic<int64_t> allocations{0};  // the process's, for fault injection
  std::lock_guard lock(mutex_);
  if (config_.fail_allocation > 0 && ++allocations == config_.fail_allocation) {
    ++stats_.num_ooms;
    throw OutOfMemoryError(
        format_text("out of memory on {}: tried to allocate {} ({} bytes); injected failure of "
                    "allocation {} of this process (XHAL_FAULT_ALLOC={})",
                    device_.str(), mib(bytes), bytes, config_.fail_allocation, config_.fail_allocation));
  }
  // A request no device can hold is refused before rounding it up to a size class or a segment
  // could wrap it around to a small one.
  if (bytes > kMaxRequest) {
    ++stats_.num_ooms;
    throw_oom(bytes, "the request exceeds 2^62 bytes");
  }
  const size_t size = round_up(bytes, kRound);
  Block* block = nullptr;
  if (config_.direct) {
    block = new_segment(size, false, stream);
    if (block == nullptr) {
      release_cached_segments();
      block = new_segment(size, false, stream);
    }
  } else {
    const bool small = size <= kSmallRequest;
    Pool& pool = small ? small_pool_ : large_pool_;
    block = find_free(pool, size, stream);
    if (block == nullptr) {
      const size_t segment = small ? kSegment : round_up(size, kSegment);
      block = new_segment(segment, small, stream);
      if (block == nullptr) {
        release_cached_segments();
        block = new_segment(segment, small, stream);
      }
    } else {
      pool.erase(block);
    }
    if (block != nullptr) {
      // Split off the remainder when it is worth keeping as its own block.
      const size_t remainder = block->size - size;
      if (remainder >= (small ? kRound : kSmallRequest + 1)) {
        auto* rest = new Block{block->ptr + size, remainder, stream, nullptr, false, small, block, block->next};
        if (block->next) block->next->prev = rest;
        block->next = rest;
        block->size = size;
        pool.insert(rest);
      }
    }
  }
  if (block == nullptr) {
    ++stats_.num_ooms;
    throw_oom(bytes, driver_message_.c_str());
  }
  clear_event(block);
  block->allocated = true;
  block->stream = stream;
  live_[block->ptr] = block;
  stats_.allocated += block->size;
  stats_.peak_allocated = std::max(stats_.peak_allocated, stats_.allocated);
  ++stats_.num_allocs;
  return block->ptr;
}

void CachingAllocator::deallocate(void* ptr) {
  if (ptr == nullptr) return;
  std::lock_guard lock(mutex_);
  auto it = live_.find(ptr);
  if (it == live_.end()) {
    log(LogLevel::error, "allocator {}: free of unknown pointer {}", device_.str(), ptr);
    return;
  }
  Block* block = it->second;
  live_.erase(it);
  stats_.allocated -= block->size;
  block->allocated = false;
  if (config_.direct) {
    stats_.reserved -= block->size;
    plugin_call_unchecked<&xhal_plugin_api::mem_release>(api_, device_.index, block->ptr);
    delete block;
    return;
  }
  // Later use on another stream must wait for the work queued on this one.
  PluginMessage message;
  if (block->stream != nullptr &&
      plugin_status<&xhal_plugin_api::event_create>(api_, message, device_.index, &block->event) == XHAL_OK &&
      block->event != nullptr) {
    plugin_call_unchecked<&xhal_plugin_api::event_record>(api_, device_.index, block->event, block->stream);
  }
  free_block(block);
}

void CachingAllocator::free_block(Block* block) {
  Pool& pool = block->small ? small_pool_ : large_pool_;
  // Merge with free neighbours on the same stream whose events (if any) are done.
  for (Block* neighbour : {block->prev, block->next}) {
    if (neighbour == nullptr || neighbour->allocated || neighbour->stream != block->stream) continue;
    if (!ready_for(neighbour, nullptr) || !ready_for(block, nullptr)) continue;
    pool.erase(neighbour);
    if (neighbour == block->prev) {
      neighbour->size += block->size;
      neighbour->next = block->next;
      if (block->next) block->next->prev = neighbour;
      delete block;
      block = neighbour;
    } else {
      block->size += neighbour->size;
      block->next = neighbour->next;
      if (neighbour->next) neighbour->next->prev = block;
      delete neighbour;
    }
  }
  pool.insert(block);
}

bool CachingAllocator::ready_for(Block* block, void* stream) {
  if (block->event == nullptr) return true;
  if (stream != nullptr && stream == block->stream) return true;
  PluginMessage message;
  if (plugin_status<&xhal_plugin_api::event_query>(api_, message, device_.index, block->event) != XHAL_OK) {
    return false;
  }
  clear_event(block);
  return true;
}

void CachingAllocator::clear_event(Block* block) {
  if (block->event != nullptr) {
    plugin_call_unchecked<&xhal_plugin_api::event_destroy>(api_, device_.index, block->event);
    block->event = nullptr;
  }
}

CachingAllocator::Block* CachingAllocator::find_free(Pool& pool, size_t size, void* stream) {
  Block key{nullptr, size};
  for (auto it = pool.lower_bound(&key); it != pool.end(); ++it) {
    Block* b = *it;
    // Large blocks are not split down to tiny requests (keeps fragmentation in check).
    if (!b->small && b->size > size + 4 * kSegment && b->size > 2 * size) break;
    if (b->stream == stream || ready_for(b, stream)) return b;
  }
  return nullptr;
}

CachingAllocator::Block* CachingAllocator::new_segment(size_t size, bool small, void* stream) {
  if (config_.memory_limit != 0 && stats_.reserved + size > config_.memory_limit) return nullptr;
  void* ptr = nullptr;
  PluginMessage message;
  const xhal_status status = plugin_status<&xhal_plugin_api::mem_alloc>(api_, message, device_.index, size, &ptr);
  if (status == XHAL_ERR_OUT_OF_MEMORY) {
    driver_message_ = message.text;
    return nullptr;
  }
  if (status != XHAL_OK) {
    throw_status(status, format_text("allocator {}: driver allocation of {} bytes failed: {}", device_.str(), size,
                                     message.text));
  }
  stats_.reserved += size;
  return new Block{static_cast<char*>(ptr), size, stream, nullptr, false, small, nullptr, nullptr};
}

void CachingAllocator::release_cached_segments() {
  for (Pool* pool : {&small_pool_, &large_pool_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* b = *it;
      if (b->prev == nullptr && b->next == nullptr) {  // a whole, unused segment
        clear_event(b);
        plugin_call_unchecked<&xhal_plugin_api::mem_release>(api_, device_.index, b->ptr);
        stats_.reserved -= b->size;
        delete b;
        it = pool->erase(it);
      } else {
        ++it;
      }
    }
  }
}

void CachingAllocator::throw_oom(size_t request, const char* driver_message) {
  size_t free_bytes = 0, total_bytes = 0;
  plugin_call_unchecked<&xhal_plugin_api::mem_info>(api_, device_.index, &free_bytes, &total_bytes);
  std::string limit =
      config_.memory_limit ? format_text(", limit {} (XHAL_MEMORY_LIMIT)", mib(config_.memory_limit)) : "";
  throw OutOfMemoryError(
      format_text("out of memory on {}: tried to allocate {} ({} bytes); device free {} of total {}; "
                  "allocated by xhal {}, reserved by xhal {}{}{}{}",
                  device_.str(), mib(request), request, mib(free_bytes), mib(total_bytes), mib(stats_.allocated),
                  mib(stats_.reserved), limit, driver_message && *driver_message ? "; driver: " : "",
                  driver_message ? driver_message : ""));
}

void CachingAllocator::empty_cache() {
  std::lock_guard lock(mutex_);
  release_cached_segments();
}

void CachingAllocator::reset_peak_stats() {
  std::lock_guard lock(mutex_);
  stats_.peak_allocated = stats_.allocated;
}

MemoryStatus CachingAllocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace xhal

// The caching allocator (src/core/allocator.hpp) against a fake driver that counts allocations,
// can run out of memory, and has events whose completion the test controls.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/allocator.hpp"
#include "xhal/half.hpp"
#include "xhal/registry.hpp"
#include "xhal/xhal.hpp"

namespace xhal {
namespace {

struct FakeDriver {
  size_t capacity = size_t(64) << 20;
  size_t used = 0;
  int mallocs = 0, frees = 0;
  std::map<void*, size_t> blocks;
  std::set<void*> pending_events;  // recorded, not yet complete
  int next_event = 1;
};
FakeDriver* g_driver = nullptr;

xhal_status fake_malloc(void*, int32_t, size_t bytes, void** ptr, char* msg, size_t len) {
  if (g_driver->used + bytes > g_driver->capacity) {
    std::snprintf(msg, len, "fake driver out of memory");
    return XHAL_ERR_OUT_OF_MEMORY;
  }
  *ptr = std::malloc(bytes);
  g_driver->used += bytes;
  g_driver->blocks[*ptr] = bytes;
  ++g_driver->mallocs;
  return XHAL_OK;
}
xhal_status fake_free(void*, int32_t, void* ptr, char*, size_t) {
  g_driver->used -= g_driver->blocks.at(ptr);
  g_driver->blocks.erase(ptr);
  std::free(ptr);
  ++g_driver->frees;
  return XHAL_OK;
}
xhal_status fake_mem_info(void*, int32_t, size_t* free_bytes, size_t* total, char*, size_t) {
  *free_bytes = g_driver->capacity - g_driver->used;
  *total = g_driver->capacity;
  return XHAL_OK;
}
xhal_status fake_event_create(void*, int32_t, void** event, char*, size_t) {
  *event = reinterpret_cast<void*>(intptr_t(g_driver->next_event++));
  return XHAL_OK;
}
xhal_status fake_event_destroy(void*, int32_t, void* event, char*, size_t) {
  g_driver->pending_events.erase(event);
  return XHAL_OK;
}
xhal_status fake_event_record(void*, int32_t, void* event, void*, char*, size_t) {
  g_driver->pending_events.insert(event);
  return XHAL_OK;
}
xhal_status fake_event_query(void*, int32_t, void* event, char*, size_t) {
  return g_driver->pending_events.count(event) ? XHAL_NOT_READY : XHAL_OK;
}

void* const kStreamA = reinterpret_cast<void*>(0xa);
void* const kStreamB = reinterpret_cast<void*>(0xb);

class Allocator : public ::testing::Test {
 protected:
  void SetUp() override {
    g_driver = &driver_;
    api_.mem_alloc = fake_malloc;
    api_.mem_release = fake_free;
    api_.mem_info = fake_mem_info;
    api_.event_create = fake_event_create;
    api_.event_destroy = fake_event_destroy;
    api_.event_record = fake_event_record;
    api_.event_query = fake_event_query;
  }
  FakeDriver driver_;
  xhal_plugin_api api_{};
  const Device device_{DeviceType::cuda, 0};
};

// A request near 2^64 once rounded up to a small size class (the sum wrapped): it is out of memory,
// and the driver is never asked.
TEST_F(Allocator, RequestsNearTwoToThe64AreRefusedNotWrapped) {
  for (const bool direct : {false, true}) {
    AllocatorConfig config;
    config.direct = direct;
    CachingAllocator a(device_, api_, config);
    for (const size_t bytes : {SIZE_MAX, SIZE_MAX - 100, (size_t(1) << 62) + 1}) {
      EXPECT_THROW(a.allocate(bytes, nullptr), OutOfMemoryError) << bytes;
    }
    EXPECT_EQ(driver_.mallocs, 0);
    EXPECT_EQ(a.stats().num_ooms, 3u);
  }
}

TEST_F(Allocator, SmallRequestsShareOneSegmentAndAreRounded) {
  CachingAllocator a(device_, api_, {});
  void* p = a.allocate(1, nullptr);
  void* q = a.allocate(700, nullptr);
  EXPECT_EQ(driver_.mallocs, 1) << "both fit in one 2 MiB segment";
  EXPECT_EQ(static_cast<char*>(q) - static_cast<char*>(p), 512) << "1 byte rounds up to 512";
  EXPECT_EQ(a.stats().allocated, 512u + 1024u);
  EXPECT_EQ(a.stats().reserved, CachingAllocator::kSegment);
  a.deallocate(p);
  a.deallocate(q);
  EXPECT_EQ(a.stats().allocated, 0u);
  EXPECT_EQ(a.stats().peak_allocated, 1536u);
  EXPECT_EQ(a.stats().num_allocs, 2u);
}

TEST_F(Allocator, FreedBlocksAreSplitReusedAndMerged) {
  CachingAllocator a(device_, api_, {});
  char* p = static_cast<char*>(a.allocate(8 << 20, nullptr));
  a.deallocate(p);
  void* q = a.allocate(5 << 20, nullptr);
  EXPECT_EQ(q, p) << "the cached 8 MiB block is reused";
  void* r = a.allocate(3 << 20, nullptr);
  EXPECT_EQ(r, p + (5 << 20)) << "the 3 MiB remainder was split off and reused";
  EXPECT_EQ(driver_.mallocs, 1);
  a.deallocate(q);
  a.deallocate(r);
  void* s = a.allocate(8 << 20, nullptr);
  EXPECT_EQ(s, p) << "the two halves merged back";
  EXPECT_EQ(driver_.mallocs, 1);
  a.deallocate(s);
}

TEST_F(Allocator, ReuseOnAnotherStreamWaitsForTheEvent) {
  CachingAllocator a(device_, api_, {});
  void* p = a.allocate(4 << 20, kStreamA);
  a.deallocate(p);  // records an event on stream A
  ASSERT_EQ(driver_.pending_events.size(), 1u);
  void* same_stream = a.allocate(4 << 20, kStreamA);
  EXPECT_EQ(same_stream, p) << "same stream: reuse at once";
  a.deallocate(same_stream);
  void* other = a.allocate(4 << 20, kStreamB);
  EXPECT_NE(other, p) << "stream B must not get memory stream A may still use";
  a.deallocate(other);
  driver_.pending_events.clear();  // the work on A finished
  void* later = a.allocate(4 << 20, kStreamB);
  EXPECT_TRUE(later == p || later == other);
  a.deallocate(later);
}

TEST_F(Allocator, OutOfMemoryFreesTheCacheRetriesThenThrows) {
  driver_.capacity = 10 << 20;
  CachingAllocator a(device_, api_, {});
  void* p = a.allocate(6 << 20, nullptr);
  a.deallocate(p);  // cached, still reserved
  void* q = a.allocate(8 << 20, nullptr);  // needs the cache released first
  EXPECT_EQ(driver_.frees, 1);
  EXPECT_EQ(a.stats().num_ooms, 0u);
  try {
    a.allocate(8 << 20, nullptr);
    ADD_FAILURE() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.code(), Errc::out_of_memory);
    for (const char* part : {"cuda:0", "8.0 MiB", "free 2.0 MiB of total 10.0 MiB", "allocated by xhal 8.0 MiB",
                             "reserved by xhal 8.0 MiB", "fake driver out of memory"}) {
      EXPECT_NE(m.find(part), std::string::npos) << part << " missing in: " << m;
    }
  }
  EXPECT_EQ(a.stats().num_ooms, 1u);
  a.deallocate(q);
  void* r = a.allocate(8 << 20, nullptr);  // still works after the failure
  EXPECT_NE(r, nullptr);
  a.deallocate(r);
}

TEST_F(Allocator, MemoryLimitActsAsOutOfMemory) {
  CachingAllocator a(device_, api_, {false, 4 << 20});
  void* p = a.allocate(2 << 20, nullptr);
  EXPECT_THROW(a.allocate(4 << 20, nullptr), OutOfMemoryError);
  a.deallocate(p);
}

TEST_F(Allocator, DirectModeGoesToTheDriverEveryTime) {
  CachingAllocator a(device_, api_, {true, 0});
  void* p = a.allocate(1000, nullptr);
  a.deallocate(p);
  void* q = a.allocate(1000, nullptr);
  a.deallocate(q);
  EXPECT_EQ(driver_.mallocs, 2);
  EXPECT_EQ(driver_.frees, 2);
  EXPECT_EQ(a.stats().reserved, 0u);
}

TEST_F(Allocator, EmptyCacheReturnsUnusedSegments) {
  CachingAllocator a(device_, api_, {});
  void* p = a.allocate(6 << 20, nullptr);
  void* small = a.allocate(100, nullptr);
  a.deallocate(p);
  a.empty_cache();
  EXPECT_EQ(a.stats().reserved, CachingAllocator::kSegment) << "the small segment is still in use";
  a.deallocate(small);
  a.empty_cache();
  EXPECT_EQ(a.stats().reserved, 0u);
  EXPECT_EQ(driver_.used, 0u);
}

TEST_F(Allocator, ZeroBytesIsNull) {
  CachingAllocator a(device_, api_, {});
  EXPECT_EQ(a.allocate(0, nullptr), nullptr);
  a.deallocate(nullptr);
  EXPECT_EQ(driver_.mallocs, 0);
}

// Through the public API on the CPU device: a limit set by XHAL_MEMORY_LIMIT (ctest runs this
// binary with XHAL_MEMORY_LIMIT=64M and the filter MemoryLimit.*).
TEST(MemoryLimit, OutOfMemoryMessageAndRecovery) {
  if (std::getenv("XHAL_MEMORY_LIMIT") == nullptr) GTEST_SKIP() << "needs XHAL_MEMORY_LIMIT=64M";
  auto& manager = DeviceManager::instance();
  const Device cpu = Device::cpu();
  {
    Tensor keep = Tensor::empty({8 << 20}, DType::f32, cpu);  // 32 MiB
    try {
      Tensor::empty({10 << 20}, DType::f32, cpu);  // 40 MiB more: over 64 MiB
      ADD_FAILURE() << "expected OutOfMemoryError";
    } catch (const OutOfMemoryError& e) {
      EXPECT_NE(std::string(e.what()).find("XHAL_MEMORY_LIMIT"), std::string::npos) << e.what();
    }
    EXPECT_EQ(manager.memory_status(cpu).num_ooms, 1u);
  }
  Tensor after = Tensor::empty({10 << 20}, DType::f32, cpu);  // fits once `keep` is gone
  EXPECT_EQ(after.numel(), 10 << 20);
}

// rope_cache of a size the device cannot hold (32 GiB of positions, as a fuzzed extent asks for) is
// the allocator's out-of-memory error, raised before any host memory of that size is taken.
TEST(MemoryLimit, RopeCacheLargerThanTheDevice) {
  if (std::getenv("XHAL_MEMORY_LIMIT") == nullptr) GTEST_SKIP() << "needs XHAL_MEMORY_LIMIT=64M";
  EXPECT_THROW(ops::rope_cache(int64_t(1) << 32, 2, 10000.0), OutOfMemoryError);
  const Tensor fits = ops::rope_cache(16, 64, 10000.0);  // and the runtime stays usable
  EXPECT_EQ(fits.numel(), 16 * 64);
}

// The bytes this process has resident now (not its peak).
int64_t resident_bytes() {
  long pages = 0, resident = 0;
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return int64_t(resident) * sysconf(_SC_PAGESIZE);
}

// The CPU attention kernels take their workspaces from the allocator: a head dim of 2^20 with 3
// tokens runs within XHAL_MEMORY_LIMIT (or fails with out_of_memory), 2^23 fails with it, and nothing
// is held once the call returns and the cache is emptied. (Thread-local workspaces once kept 4.3 GiB
// after such a call, and killed the process at 2^23.)
TEST(MemoryLimit, AttentionWorkspacesComeFromTheAllocator) {
  if (std::getenv("XHAL_MEMORY_LIMIT") == nullptr) GTEST_SKIP() << "needs XHAL_MEMORY_LIMIT=64M";
  auto& manager = DeviceManager::instance();
  const Device cpu = Device::cpu();
  for (const int64_t D : {int64_t(1) << 20, int64_t(1) << 23}) {
    SCOPED_TRACE("D = " + std::to_string(D));
    const int64_t S = 3;
    std::vector<float> q(size_t(S * D)), k(q.size()), v(q.size()), out(q.size(), NAN);
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> dist(-1, 1);
    for (auto* buffer : {&q, &k, &v}) {
      for (float& x : *buffer) x = dist(rng) * 0.01f;
    }
    const MemoryStatus before = manager.memory_status(cpu);
    const int64_t resident_before = resident_bytes();
    bool ran = false;
    try {
      ops::attention(TensorView(q.data(), DType::f32, {1, S, 1, D}), TensorView(k.data(), DType::f32, {1, S, 1, D}),
                     TensorView(v.data(), DType::f32, {1, S, 1, D}), TensorView(out.data(), DType::f32, {1, S, 1, D}),
                     {.causal = true});
      ran = true;
    } catch (const OutOfMemoryError& e) {
      EXPECT_NE(std::string(e.what()).find("attention"), std::string::npos) << e.what();
    }
    if (D == int64_t(1) << 20) {
      EXPECT_TRUE(ran) << "48 MiB of workspace fits in 64 MiB";
    }
    if (D == int64_t(1) << 23) {
      EXPECT_FALSE(ran) << "384 MiB of workspace does not fit in 64 MiB";
    }
    manager.empty_cache(cpu);
    EXPECT_EQ(manager.memory_status(cpu).allocated, before.allocated);
    EXPECT_LE(manager.memory_status(cpu).reserved, before.reserved);
    EXPECT_LT(resident_bytes() - resident_before, int64_t(64) << 20) << "memory held after the call";
    if (ran) {  // row 0 sees key 0 alone: out = v[0]
      for (int64_t d = 0; d < D; d += D / 16) EXPECT_FLOAT_EQ(out[size_t(d)], v[size_t(d)]) << d;
    }
  }
}

// A bf16 attention with too little memory left for the packed K and V that its AMX kernel shares
// among a head's tasks still runs (the kernel then packs per task) and gives the same result, bit
// for bit. Where that kernel is the one chosen, the refused scratch shows as an out-of-memory event.
TEST(MemoryLimit, AttentionWithoutRoomForPackedKv) {
  if (std::getenv("XHAL_MEMORY_LIMIT") == nullptr) GTEST_SKIP() << "needs XHAL_MEMORY_LIMIT=64M";
  auto& manager = DeviceManager::instance();
  const Device cpu = Device::cpu();
  const std::vector<int64_t> shape{1, 1024, 8, 128};  // 2 MiB each in bf16; packed K and V: 4 MiB
  std::vector<uint16_t> host(size_t(1024 * 8 * 128));
  std::mt19937 rng(12345);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (uint16_t& x : host) x = float_to_bf16(dist(rng));
  const Tensor q = Tensor::from_host(host.data(), shape, DType::bf16, cpu);
  const Tensor k = Tensor::from_host(host.data() + 1, {1, 1023, 8, 128}, DType::bf16, cpu);
  const Tensor v = Tensor::from_host(host.data() + 2, {1, 1023, 8, 128}, DType::bf16, cpu);
  Tensor roomy = Tensor::empty(shape, DType::bf16, cpu), cramped = Tensor::empty(shape, DType::bf16, cpu);
  const AttentionParams causal{.causal = true};
  const registry::Explanation ex = registry::explain([&] { ops::attention(q, k, v, roomy, causal); });
  const bool amx = std::any_of(ex.candidates.begin(), ex.candidates.end(),
                               [](const registry::Candidate& c) { return c.taken && c.kernel == "cpu.attention_amx"; });
  ops::attention(q, k, v, roomy, causal);
  const uint64_t ooms_before = manager.memory_status(cpu).num_ooms;
  {
    Tensor ballast = Tensor::empty({(52 << 20) / 4}, DType::f32, cpu);  // 62 of 64 MiB in use
    ops::attention(q, k, v, cramped, causal);
  }
  EXPECT_EQ(manager.memory_status(cpu).num_ooms, ooms_before + (amx ? 1 : 0)) << ex.str();
  std::vector<uint16_t> a(host.size()), b(host.size());
  roomy.copy_to_host(a.data());
  cramped.copy_to_host(b.data());
  EXPECT_EQ(a, b);
}

// Fault injection (ctest runs this binary with XHAL_FAULT_ALLOC=3 and the filter FaultAlloc.*): the
// third allocation of the process fails as out of memory, naming the injection; the allocations
// after it succeed and ops run again.
TEST(FaultAlloc, TheNthAllocationFailsAndTheRuntimeStaysUsable) {
  const char* n = std::getenv("XHAL_FAULT_ALLOC");
  if (n == nullptr || std::string(n) != "3") GTEST_SKIP() << "needs XHAL_FAULT_ALLOC=3";
  const Device cpu = Device::cpu();
  const std::vector<float> ones(64, 1.0f);
  Tensor x = Tensor::from_host(ones.data(), {2, 32}, DType::f32, cpu);  // allocation 1
  Tensor w = Tensor::from_host(ones.data(), {32}, DType::f32, cpu);  // allocation 2
  const uint64_t ooms_before = DeviceManager::instance().memory_status(cpu).num_ooms;
  try {
    Tensor::empty({2, 32}, DType::f32, cpu);  // allocation 3: injected failure
    ADD_FAILURE() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    EXPECT_EQ(e.code(), Errc::out_of_memory);
    EXPECT_NE(std::string(e.what()).find("injected failure of allocation 3 of this process (XHAL_FAULT_ALLOC=3)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(DeviceManager::instance().memory_status(cpu).num_ooms, ooms_before + 1);
  Tensor out = Tensor::empty({2, 32}, DType::f32, cpu);  // allocation 4 succeeds
  ops::rms_norm(x, w, 0.0f, out);
  std::vector<float> got(64);
  out.copy_to_host(got.data());
  for (float v : got) EXPECT_FLOAT_EQ(v, 1.0f);  // rms of ones is 1
}

}  // namespace
}  // namespace xhal

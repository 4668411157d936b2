// Conformance of kv_cache_write: i32 and i64 slots in any order, skipped tokens (negative slots),
// odd block sizes and head dims (Dv != D), padded cache rows, an empty batch; a slot past the cache
// (the CPU refuses the call and writes nothing, a GPU skips that token) and a slot used twice (the
// CPU refuses the call).
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "conformance.hpp"
#include "golden/golden.hpp"

namespace xhal::test {
namespace {

struct KvCacheCase {
  int64_t T, num_blocks, block_size, Hkv, D, Dv, pad;
  DType slot_type;
};

const KvCacheCase kKvCacheCases[] = {{1, 1, 1, 1, 8, 8, 0, DType::i32},         {7, 4, 16, 2, 64, 64, 0, DType::i64},
                                     {100, 30, 5, 3, 72, 40, 8, DType::i32},    {0, 2, 16, 1, 8, 8, 0, DType::i32},
                                     {300, 40, 16, 8, 128, 128, 0, DType::i64}, {50, 7, 16, 1, 256, 0, 0, DType::i32}};

// T distinct slots of the cache in random order, every seventh token skipped (-1).
std::vector<int64_t> random_slots(int64_t T, int64_t capacity, std::mt19937_64& rng) {
  std::vector<int64_t> all(static_cast<size_t>(capacity));
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(static_cast<size_t>(T));
  for (size_t t = 3; t < all.size(); t += 7) all[t] = -1;
  return all;
}

TEST_P(Conformance, KvCacheWrite) {
  for (const auto& [T, blocks, block_size, H, D, Dv, pad, slot_type] : kKvCacheCases) {
    SCOPED_TRACE(fmt::format("T {} blocks {} block {} H {} D {} Dv {} pad {}", T, blocks, block_size, H, D, Dv, pad));
    const auto slot_values = random_slots(T, blocks * block_size, rng());
    auto slots = ints({T}, slot_values, slot_type);
    auto k = random({T, H, D}), v = random({T, H, Dv});
    auto k_cache = random({blocks, block_size, H, D}, {{}, pad}),
         v_cache = random({blocks, block_size, H, Dv}, {{}, pad});
    ops::kv_cache_write(k, v, slots, k_cache, v_cache);
    const auto expected =
        golden::kv_cache_write(k.values(), v.values(), slot_values, k_cache.values(), v_cache.values(), H, D, Dv);
    expect_close(k_cache.download("k_cache"), expected.k_cache, dtype(), "k_cache");
    expect_close(v_cache.download("v_cache"), expected.v_cache, dtype(), "v_cache");
  }
}

TEST_P(Conformance, KvCacheWriteSlotOutOfRange) {
  const int64_t blocks = 3, block_size = 4, H = 2, D = 16;
  for (const int64_t bad : {blocks * block_size, int64_t(1) << 40}) {
    SCOPED_TRACE(fmt::format("slot {}", bad));
    const std::vector<int64_t> slot_values = {5, bad, 0};
    auto slots = ints({3}, slot_values, DType::i64);
    auto k = random({3, H, D}), v = random({3, H, D});
    auto k_cache = random({blocks, block_size, H, D}), v_cache = random({blocks, block_size, H, D});
    if (device().type == DeviceType::cpu) {
      const auto before = k_cache.download("k_cache before");
      EXPECT_THROW(ops::kv_cache_write(k, v, slots, k_cache, v_cache), Error);
      EXPECT_EQ(k_cache.download("k_cache after"), before) << "k_cache was written";
      continue;
    }
    ops::kv_cache_write(k, v, slots, k_cache, v_cache);
    const auto expected =
        golden::kv_cache_write(k.values(), v.values(), {5, -1, 0}, k_cache.values(), v_cache.values(), H, D, D);
    expect_close(k_cache.download("k_cache"), expected.k_cache, dtype(), "k_cache");
  }
}

// The CPU checks that no slot repeats; a GPU does not (one of the tokens lands, docs/ops.md).
TEST_P(Conformance, KvCacheWriteSlotTwice) {
  if (device().type != DeviceType::cpu) GTEST_SKIP() << "only the CPU backend checks for repeated slots";
  auto slots = ints({3}, {2, 7, 2});
  auto k = random({3, 1, 8}), v = random({3, 1, 8});
  auto k_cache = random({2, 4, 1, 8}), v_cache = random({2, 4, 1, 8});
  const auto before = v_cache.download("v_cache before");
  try {
    ops::kv_cache_write(k, v, slots, k_cache, v_cache);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("slot 2 twice"), std::string::npos) << e.what();
  }
  EXPECT_EQ(v_cache.download("v_cache after"), before) << "v_cache was written";
}

}  // namespace
}  // namespace xhal::test

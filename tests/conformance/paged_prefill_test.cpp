// Conformance of paged_prefill against the float64 reference (keys gathered from the cache):
// chunks of new tokens after cached ones (causal, bottom-right), a whole prompt at once, one token
// (decode through prefill), a sequence with no new tokens, one shorter than its chunk (its first
// rows see nothing), block sizes 1, 7, 16 and 64, blocks in shuffled order, GQA and MQA, Dv != D,
// windows, softcap, rows past the last sequence, lse.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "attention_cases.hpp"
#include "conformance.hpp"
#include "golden/golden.hpp"

namespace xhal::test {
namespace {

struct PagedPrefillCase {
  std::vector<int64_t> new_tokens, seq_lens;  // per sequence
  int64_t tail_rows;  // query rows past the last sequence
  int64_t block_size, Hq, Hkv, D, Dv;
  AttentionParams params;
};

TEST_P(Conformance, PagedPrefill) {
  const std::vector<PagedPrefillCase> cases = {
      {{5, 1, 17}, {5, 40, 100}, 0, 16, 4, 2, 64, 64, {.causal = true}},
      {{33, 7}, {33, 70}, 0, 1, 8, 1, 128, 128, {.causal = true, .window_left = 20, .softcap = 30.0f}},
      {{3, 9}, {10, 9}, 2, 7, 2, 2, 40, 24, {}},
      {{0, 4, 2}, {8, 2, 2}, 0, 16, 4, 4, 64, 64, {.causal = true}},  // 4 new tokens, 2 keys: 2 rows see nothing
      {{64, 128, 1, 200}, {64, 300, 513, 200}, 0, 64, 8, 2, 128, 128, {.causal = true}},
      {{100, 30}, {612, 30}, 1, 16, 6, 2, 96, 96, {.causal = true, .window_left = 64, .window_right = 0}},
      {{50}, {130}, 0, 16, 4, 1, 256, 256, {.scale = 0.1f, .causal = true}},
  };
  for (const PagedPrefillCase& c : cases) {
    SCOPED_TRACE(
        fmt::format("new [{}] seq_lens [{}] tail {} block {} Hq {} Hkv {} D {} Dv {} causal {} window ({},{}) "
                    "softcap {}",
                    fmt::join(c.new_tokens, ","), fmt::join(c.seq_lens, ","), c.tail_rows, c.block_size, c.Hq, c.Hkv,
                    c.D, c.Dv, c.params.causal, c.params.window_left, c.params.window_right, c.params.softcap));
    const int64_t B = int64_t(c.seq_lens.size());
    std::vector<int64_t> cu_q{0};
    for (int64_t n : c.new_tokens) cu_q.push_back(cu_q.back() + n);
    const int64_t Tq = cu_q.back() + c.tail_rows, max_q = *std::max_element(c.new_tokens.begin(), c.new_tokens.end());
    int64_t max_blocks = 1;
    for (int64_t L : c.seq_lens) max_blocks = std::max(max_blocks, (L + c.block_size - 1) / c.block_size);
    const int64_t num_blocks = B * max_blocks + 3;
    // Blocks handed out in shuffled order, as a real cache would after reuse.
    std::vector<int64_t> table(static_cast<size_t>(num_blocks));
    std::iota(table.begin(), table.end(), 0);
    std::shuffle(table.begin(), table.end(), rng());
    table.resize(size_t(B * max_blocks));
    auto q = random({Tq, c.Hq, c.D});
    auto k_cache = random({num_blocks, c.block_size, c.Hkv, c.D});
    auto v_cache = random({num_blocks, c.block_size, c.Hkv, c.Dv});
    auto block_table = ints({B, max_blocks}, table);
    auto seq_lens = ints({B}, c.seq_lens);
    auto cu_seqlens_q = ints({B + 1}, cu_q);
    auto out = poisoned({Tq, c.Hq, c.Dv});
    auto lse = TestTensor::poisoned({c.Hq, Tq}, DType::f32, device());
    ops::paged_prefill(q, k_cache, v_cache, cu_seqlens_q, block_table, seq_lens, max_q, out, c.params, &lse.view());
    const auto expected = golden::paged_prefill(q.values(), k_cache.values(), v_cache.values(), cu_q, table, c.seq_lens,
                                                c.Hq, c.Hkv, c.D, c.Dv, c.block_size, mask_of(c.params, c.D));
    expect_close(out.download("out"), expected.out, dtype(), "out");
    expect_close(lse.download("lse"), expected.lse, DType::f32, "lse");
  }
}

// The same tokens through paged_prefill and attention_varlen over the same keys packed: the two
// ops agree (each against float64 above; here against each other, without lse).
TEST_P(Conformance, PagedPrefillMatchesVarlen) {
  const std::vector<int64_t> new_tokens{37, 1, 80}, seq_lens{37, 150, 200};
  const int64_t B = 3, block_size = 16, Hq = 8, Hkv = 2, D = 128, max_blocks = 13;
  std::vector<int64_t> cu_q{0}, cu_k{0};
  for (int64_t b = 0; b < B; ++b) {
    cu_q.push_back(cu_q.back() + new_tokens[size_t(b)]);
    cu_k.push_back(cu_k.back() + seq_lens[size_t(b)]);
  }
  std::vector<int64_t> table(size_t(B * max_blocks));
  std::iota(table.begin(), table.end(), 0);
  std::shuffle(table.begin(), table.end(), rng());
  auto q = random({cu_q.back(), Hq, D});
  auto k_cache = random({B * max_blocks, block_size, Hkv, D});
  auto v_cache = random({B * max_blocks, block_size, Hkv, D});
  // The packed keys of sequence b: its cache rows in order.
  std::vector<double> k_packed, v_packed;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t j = 0; j < seq_lens[size_t(b)]; ++j) {
      const size_t row =
          size_t((table[size_t(b * max_blocks + j / block_size)] * block_size + j % block_size) * Hkv * D);
      k_packed.insert(k_packed.end(), k_cache.values().begin() + long(row),
                      k_cache.values().begin() + long(row + Hkv * D));
      v_packed.insert(v_packed.end(), v_cache.values().begin() + long(row),
                      v_cache.values().begin() + long(row + Hkv * D));
    }
  }
  auto k = TestTensor::of({cu_k.back(), Hkv, D}, dtype(), device(), k_packed);
  auto v = TestTensor::of({cu_k.back(), Hkv, D}, dtype(), device(), v_packed);
  const AttentionParams params{.causal = true};
  auto paged_out = poisoned({cu_q.back(), Hq, D}), varlen_out = poisoned({cu_q.back(), Hq, D});
  ops::paged_prefill(q, k_cache, v_cache, ints({B + 1}, cu_q), ints({B, max_blocks}, table), ints({B}, seq_lens), 80,
                     paged_out, params);
  ops::attention_varlen(q, k, v, ints({B + 1}, cu_q), ints({B + 1}, cu_k), 80, 200, varlen_out, params);
  expect_close(paged_out.download("paged_prefill out"), varlen_out.download("attention_varlen out"), dtype(), "out");
}

}  // namespace
}  // namespace xhal::test

// Conformance of attention, attention_varlen and paged_attention: head dims 64..256, GQA ratios 1,
// 4, 8, causal with Sq != Sk (bottom-right), windows, softcap, custom and negative scales, lse, empty batches,
// rows that see no key, [B,H,S,D] (strided) layouts, and non-finite values where no row may look.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "attention_cases.hpp"
#include "conformance.hpp"
#include "golden/golden.hpp"

namespace xhal::test {
namespace {

const std::vector<AttnCase> kDenseCases = {
    {1, 1, 1, 1, 1, 64, 64, {}},
    {2, 7, 7, 4, 4, 64, 64, {.causal = true}},
    {1, 129, 129, 8, 2, 80, 80, {.causal = true}, true, kHeadsFirst},
    {2, 7, 129, 8, 1, 96, 96, {.causal = true}},  // Sq < Sk: bottom-right
    {1, 129, 7, 4, 1, 128, 128, {.causal = true}},  // Sq > Sk: first rows see nothing
    {1, 33, 129, 16, 2, 128, 64, {}, false, kHeadsFirst},  // Dv != D, GQA 8, no lse
    {1, 65, 65, 2, 2, 256, 256, {.causal = true, .window_left = 16}},
    {1, 300, 517, 4, 2, 256, 256, {.causal = true}},  // D 256: several 64-key tiles, GQA
    {2, 130, 200, 2, 1, 256, 256, {.softcap = 5.0f}},  // D 256: a partial last key tile, softcap
    {1, 600, 600, 4, 2, 64, 64, {.causal = true, .window_left = 300}},  // windows starting mid-tile
    {1, 40, 70, 3, 1, 64, 64, {.window_left = 5, .window_right = 3}},
    {2, 17, 17, 4, 1, 128, 128, {.scale = 0.3f, .causal = true, .softcap = 5.0f}},
    {1, 130, 130, 2, 1, 128, 128, {.scale = 0.05f}},  // scale folded into exp2 after the max
    {1, 130, 130, 2, 1, 64, 64, {.scale = -0.125f, .causal = true}},  // negative: no folding
    {1, 1000, 1000, 1, 1, 64, 64, {.causal = true}},
    {1, 300, 517, 4, 2, 128, 128, {.causal = true}},  // several 128-key tiles, GQA
    {2, 200, 385, 2, 1, 128, 128, {}},  // a partial last key tile, MQA
    {0, 5, 5, 4, 2, 64, 64, {.causal = true}},  // empty batch
    {1, 3, 0, 2, 1, 64, 64, {}},  // no keys at all
};

TEST_P(Conformance, Attention) {
  for (const AttnCase& c : kDenseCases) {
    SCOPED_TRACE(describe(c));
    auto q = random({c.B, c.Sq, c.Hq, c.D}, c.layout);
    auto k = random({c.B, c.Sk, c.Hkv, c.D}, c.layout);
    auto v = random({c.B, c.Sk, c.Hkv, c.Dv}, c.layout);
    auto out = poisoned({c.B, c.Sq, c.Hq, c.Dv}, c.layout);
    auto lse = TestTensor::poisoned({c.B, c.Hq, c.Sq}, DType::f32, device());
    ops::attention(q, k, v, out, c.params, c.lse ? &lse.view() : nullptr);
    auto expected = golden::attention(q.values(), k.values(), v.values(), c.B, c.Sq, c.Sk, c.Hq, c.Hkv, c.D, c.Dv,
                                      mask_of(c.params, c.D));
    expect_close(out.download("out"), expected.out, dtype(), "out");
    if (c.lse) expect_close(lse.download("lse"), expected.lse, DType::f32, "lse");
  }
}

TEST_P(Conformance, AttentionVarlen) {
  struct Case {
    std::vector<int64_t> q_lens, k_lens;
    int64_t Hq, Hkv, D;
    AttentionParams params;
  };
  for (const Case& c :
       {Case{{7, 0, 129, 1}, {7, 3, 129, 40}, 8, 2, 64, {.causal = true}}, Case{{1, 33}, {1, 33}, 4, 4, 128, {}},
        Case{{130, 257}, {300, 257}, 4, 2, 128, {.causal = true}},
        Case{{5, 9}, {20, 9}, 8, 1, 96, {.causal = true, .window_left = 4}}, Case{{}, {}, 4, 2, 64, {}},
        Case{{130, 7}, {300, 7}, 2, 1, 256, {.causal = true}}}) {
    SCOPED_TRACE(fmt::format("q_lens [{}] k_lens [{}] Hq {} Hkv {} D {}", fmt::join(c.q_lens, ","),
                             fmt::join(c.k_lens, ","), c.Hq, c.Hkv, c.D));
    std::vector<int64_t> cu_q{0}, cu_k{0};
    for (size_t b = 0; b < c.q_lens.size(); ++b) {
      cu_q.push_back(cu_q.back() + c.q_lens[b]);
      cu_k.push_back(cu_k.back() + c.k_lens[b]);
    }
    const int64_t Tq = cu_q.back(), Tk = cu_k.back(), batch = int64_t(c.q_lens.size());
    const int64_t max_q = c.q_lens.empty() ? 0 : *std::max_element(c.q_lens.begin(), c.q_lens.end());
    const int64_t max_k = c.k_lens.empty() ? 0 : *std::max_element(c.k_lens.begin(), c.k_lens.end());
    auto q = random({Tq, c.Hq, c.D});
    auto k = random({Tk, c.Hkv, c.D});
    auto v = random({Tk, c.Hkv, c.D});
    auto cu_seqlens_q = ints({batch + 1}, cu_q), cu_seqlens_k = ints({batch + 1}, cu_k);
    auto out = poisoned({Tq, c.Hq, c.D});
    auto lse = TestTensor::poisoned({c.Hq, Tq}, DType::f32, device());
    ops::attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_q, max_k, out, c.params, &lse.view());
    auto expected = golden::attention_varlen(q.values(), k.values(), v.values(), cu_q, cu_k, c.Hq, c.Hkv, c.D, c.D,
                                             mask_of(c.params, c.D));
    expect_close(out.download("out"), expected.out, dtype(), "out");
    expect_close(lse.download("lse"), expected.lse, DType::f32, "lse");
  }
}

TEST_P(Conformance, PagedAttention) {
  struct Case {
    std::vector<int64_t> seq_lens;
    int64_t block_size, Hq, Hkv, D;
    AttentionParams params;
  };
  for (const Case& c : {Case{{1, 17, 100, 0}, 16, 8, 1, 128, {}}, Case{{64, 65, 3}, 32, 8, 2, 64, {.window_left = 20}},
                        Case{{130}, 64, 4, 4, 256, {.softcap = 8.0f}}, Case{{7, 1000}, 16, 32, 8, 80, {.scale = 0.2f}},
                        Case{{33, 300}, 16, 32, 1, 64, {}},  // 32 query heads per kv head
                        Case{{50, 9}, 16, 4, 2, 96, {}},  // 2 query heads per kv head
                        Case{{61}, 8, 6, 2, 128, {}},  // 3: padded to 4
                        Case{{1, 1000, 0, 2}, 16, 8, 2, 64, {}},  // splits of the keys, some empty
                        Case{{4100, 3}, 16, 8, 8, 64, {}},  // a dozen splits or more
                        Case{{8000}, 16, 4, 1, 128, {}},  // more splits than the merge's groups: its loop repeats
                        Case{{}, 16, 4, 1, 64, {}}}) {
    SCOPED_TRACE(fmt::format("seq_lens [{}] block {} Hq {} Hkv {} D {}", fmt::join(c.seq_lens, ","), c.block_size, c.Hq,
                             c.Hkv, c.D));
    const int64_t B = int64_t(c.seq_lens.size());
    int64_t max_blocks = 1;
    for (int64_t L : c.seq_lens) max_blocks = std::max(max_blocks, (L + c.block_size - 1) / c.block_size);
    const int64_t num_blocks = B * max_blocks + 3;
    // Blocks handed out in shuffled order, as a real cache would after reuse.
    std::vector<int64_t> ids(static_cast<size_t>(num_blocks));
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng());
    std::vector<int64_t> table(size_t(B * max_blocks));
    for (size_t i = 0; i < table.size(); ++i) table[i] = ids[i];
    auto q = random({B, c.Hq, c.D});
    auto k_cache = random({num_blocks, c.block_size, c.Hkv, c.D});
    auto v_cache = random({num_blocks, c.block_size, c.Hkv, c.D});
    auto block_table = ints({B, max_blocks}, table);
    auto seq_lens = ints({B}, c.seq_lens);
    auto out = poisoned({B, c.Hq, c.D});
    ops::paged_attention(q, k_cache, v_cache, block_table, seq_lens, out, c.params);
    auto expected = golden::paged_attention(q.values(), k_cache.values(), v_cache.values(), table, c.seq_lens, c.Hq,
                                            c.Hkv, c.D, c.D, c.block_size, mask_of(c.params, c.D));
    expect_close(out.download("out"), expected, dtype(), "out");
  }
}

// Non-finite values where a row must not look: K and V at keys the causal or window mask hides
// from some rows (diagonal tiles, window edges), at keys past a sequence's end (the next
// sequence's, in the packed layout), in the padding of strided rows (poisoned with NaN), and a NaN
// query row. What the float64 formula gives: NaN and infinities exactly in the rows that see them,
// every other row finite and within tolerance; a NaN row's lse is NaN (never -inf, "saw no key").
TEST_P(Conformance, AttentionNonFiniteAtMaskedKeys) {
  const double nan = std::nan(""), inf = INFINITY;
  const Layout padded{{}, 8};
  const std::vector<AttnCase> cases = {
      {1, 129, 129, 4, 2, 64, 64, {.causal = true}},
      {1, 300, 517, 4, 2, 128, 128, {.causal = true}, true, padded},
      {2, 65, 65, 2, 2, 128, 128, {.causal = true, .window_left = 16}},
      {1, 40, 70, 3, 1, 64, 64, {.window_left = 5, .window_right = 3}},
      {1, 129, 7, 4, 1, 64, 64, {.causal = true}},  // Sq > Sk: the first rows see nothing
      {1, 200, 200, 2, 1, 256, 256, {.causal = true}, true, kHeadsFirst},
  };
  for (const AttnCase& c : cases) {
    SCOPED_TRACE(describe(c));
    std::vector<double> qv = random({c.B, c.Sq, c.Hq, c.D}).values();
    std::vector<double> kv = random({c.B, c.Sk, c.Hkv, c.D}).values();
    std::vector<double> vv = random({c.B, c.Sk, c.Hkv, c.Dv}).values();
    const auto at = [](int64_t S, int64_t H, int64_t D, int64_t b, int64_t s, int64_t h, int64_t d) {
      return size_t(((b * S + s) * H + h) * D + d);
    };
    for (int64_t b = 0; b < c.B; ++b) {
      for (int64_t h = 0; h < c.Hkv; ++h) {
        vv[at(c.Sk, c.Hkv, c.Dv, b, c.Sk - 1, h, 1)] = nan;  // seen by the last rows only
        vv[at(c.Sk, c.Hkv, c.Dv, b, c.Sk / 2 + 3 < c.Sk ? c.Sk / 2 + 3 : 0, h, c.Dv - 1)] = inf;
        vv[at(c.Sk, c.Hkv, c.Dv, b, 0, h, 2)] = -inf;  // hidden by window_left from late rows
        kv[at(c.Sk, c.Hkv, c.D, b, c.Sk - 2 >= 0 ? c.Sk - 2 : 0, h, 3)] = nan;
      }
    }
    if (c.Sq > 2) qv[at(c.Sq, c.Hq, c.D, 0, 2, 0, 5)] = nan;  // query row 2 of head 0 is NaN
    auto q = TestTensor::of({c.B, c.Sq, c.Hq, c.D}, dtype(), device(), qv, c.layout);
    auto k = TestTensor::of({c.B, c.Sk, c.Hkv, c.D}, dtype(), device(), kv, c.layout);
    auto v = TestTensor::of({c.B, c.Sk, c.Hkv, c.Dv}, dtype(), device(), vv, c.layout);
    auto out = poisoned({c.B, c.Sq, c.Hq, c.Dv}, c.layout);
    auto lse = TestTensor::poisoned({c.B, c.Hq, c.Sq}, DType::f32, device());
    ops::attention(q, k, v, out, c.params, &lse.view());
    auto expected = golden::attention(q.values(), k.values(), v.values(), c.B, c.Sq, c.Sk, c.Hq, c.Hkv, c.D, c.Dv,
                                      mask_of(c.params, c.D));
    expect_close_nan_for_nan(out.download("out"), expected.out, dtype(), "out");
    expect_close_nan_for_nan(lse.download("lse"), expected.lse, DType::f32, "lse");
  }
}

// attention_varlen with non-finite K and V in the keys right after each sequence's own (the next
// sequence's first keys), and query rows past the last sequence: those belong to no sequence and
// are written as rows that see no key (0, lse -inf).
TEST_P(Conformance, AttentionVarlenNonFiniteAndUncoveredRows) {
  const double nan = std::nan(""), inf = INFINITY;
  const std::vector<int64_t> q_lens{70, 5, 129}, k_lens{70, 20, 129};
  const int64_t Hq = 4, Hkv = 2, D = 128, uncovered = 9;
  std::vector<int64_t> cu_q{0}, cu_k{0};
  for (size_t b = 0; b < q_lens.size(); ++b) {
    cu_q.push_back(cu_q.back() + q_lens[b]);
    cu_k.push_back(cu_k.back() + k_lens[b]);
  }
  const int64_t Tq = cu_q.back() + uncovered, Tk = cu_k.back(), batch = int64_t(q_lens.size());
  std::vector<double> kv = random({Tk, Hkv, D}).values(), vv = random({Tk, Hkv, D}).values();
  for (int64_t b = 1; b < batch; ++b) {  // the first key of sequence b: past the end of b - 1
    for (int64_t h = 0; h < Hkv; ++h) {
      vv[size_t((cu_k[size_t(b)] * Hkv + h) * D + 4)] = b % 2 ? nan : inf;
      kv[size_t((cu_k[size_t(b)] * Hkv + h) * D + 6)] = nan;
    }
  }
  auto q = random({Tq, Hq, D});
  auto k = TestTensor::of({Tk, Hkv, D}, dtype(), device(), kv);
  auto v = TestTensor::of({Tk, Hkv, D}, dtype(), device(), vv);
  auto cu_seqlens_q = ints({batch + 1}, cu_q), cu_seqlens_k = ints({batch + 1}, cu_k);
  auto out = poisoned({Tq, Hq, D});
  auto lse = TestTensor::poisoned({Hq, Tq}, DType::f32, device());
  ops::attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, 129, 129, out, {.causal = true}, &lse.view());
  // The rows past the last sequence, as one more sequence without keys.
  std::vector<int64_t> all_q = cu_q, all_k = cu_k;
  all_q.push_back(Tq);
  all_k.push_back(Tk);
  auto expected = golden::attention_varlen(q.values(), k.values(), v.values(), all_q, all_k, Hq, Hkv, D, D,
                                           mask_of({.causal = true}, D));
  expect_close_nan_for_nan(out.download("out"), expected.out, dtype(), "out");
  expect_close_nan_for_nan(lse.download("lse"), expected.lse, DType::f32, "lse");
}

// paged_attention with non-finite K and V in the slots of a sequence's last block past its length,
// in blocks no sequence uses, a NaN query head (its output NaN, the others finite), and a NaN key
// that one kv head's decode tokens see in one piece of a split context (on the GPUs only that
// piece's partial is NaN, and the merge must not pass over it).
TEST_P(Conformance, PagedAttentionNonFiniteOutsideTheSequence) {
  const double nan = std::nan("");
  const std::vector<int64_t> lens{37, 1, 1200};
  const int64_t block_size = 16, Hq = 8, Hkv = 2, D = 128, B = int64_t(lens.size());
  const int64_t max_blocks = (1200 + block_size - 1) / block_size, num_blocks = B * max_blocks + 2;
  std::vector<int64_t> table(size_t(B * max_blocks));
  std::iota(table.begin(), table.end(), 0);
  std::vector<double> kv = random({num_blocks, block_size, Hkv, D}).values();
  std::vector<double> vv = random({num_blocks, block_size, Hkv, D}).values();
  const auto poison_slot = [&](int64_t block, int64_t slot) {
    for (int64_t h = 0; h < Hkv; ++h) {
      kv[size_t(((block * block_size + slot) * Hkv + h) * D + 7)] = nan;
      vv[size_t(((block * block_size + slot) * Hkv + h) * D + 9)] = INFINITY;
    }
  };
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t j = lens[size_t(b)]; j < max_blocks * block_size; ++j) {
      poison_slot(table[size_t(b * max_blocks + j / block_size)], j % block_size);
    }
  }
  for (int64_t slot = 0; slot < block_size; ++slot) poison_slot(num_blocks - 1, slot);
  const int64_t seen = 700;  // a key of sequence 2, kv head 1: query heads 4-7 see NaN
  kv[size_t(((table[size_t(2 * max_blocks + seen / block_size)] * block_size + seen % block_size) * Hkv + 1) * D + 5)] =
      nan;
  std::vector<double> qv = random({B, Hq, D}).values();
  qv[size_t((2 * Hq + 3) * D + 11)] = nan;  // sequence 2, query head 3
  auto q = TestTensor::of({B, Hq, D}, dtype(), device(), qv);
  auto k_cache = TestTensor::of({num_blocks, block_size, Hkv, D}, dtype(), device(), kv);
  auto v_cache = TestTensor::of({num_blocks, block_size, Hkv, D}, dtype(), device(), vv);
  auto block_table = ints({B, max_blocks}, table);
  auto seq_lens = ints({B}, lens);
  auto out = poisoned({B, Hq, D});
  ops::paged_attention(q, k_cache, v_cache, block_table, seq_lens, out, {});
  auto expected = golden::paged_attention(q.values(), k_cache.values(), v_cache.values(), table, lens, Hq, Hkv, D, D,
                                          block_size, mask_of({}, D));
  expect_close_nan_for_nan(out.download("out"), expected, dtype(), "out");
}

}  // namespace
}  // namespace xhal::test

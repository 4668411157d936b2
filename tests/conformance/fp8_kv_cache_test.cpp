// Conformance of the fp8 KV cache: kv_cache_write into f8_e4m3 caches (codes bit for bit: the code
// nearest x * (1 / scale), saturated at 448, as quantize), and paged_attention and paged_prefill
// reading them against the float64 formula over the values the codes stand for (code * scale of
// the kv head). Per-tensor and per-head scales, GQA and MQA, Dv != D, odd block sizes, windows,
// softcap, empty batches, and NaN codes in slots no query may see.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "attention_cases.hpp"
#include "conformance.hpp"
#include "golden/golden.hpp"

namespace xhal::test {
namespace {

// Per head: a different f32 scale for each kv head (so a head mix-up shows); else one.
std::vector<double> head_scales(int64_t H, bool per_head, double base) {
  std::vector<double> s(per_head ? size_t(H) : 1);
  for (size_t h = 0; h < s.size(); ++h) s[h] = double(float(base * double(h % 3 + 1)));
  return s;
}

TestTensor scale_tensor(const std::vector<double>& s, Device device) {
  return TestTensor::of({int64_t(s.size())}, DType::f32, device, s);
}

// What a cache's codes stand for: code value times its kv head's scale ([..., H, D] rows).
std::vector<double> dequantized(const std::vector<double>& codes, const std::vector<double>& scales, int64_t H,
                                int64_t D) {
  std::vector<double> out(codes.size());
  for (size_t i = 0; i < codes.size(); ++i) {
    out[i] = codes[i] * scales[scales.size() == 1 ? 0 : size_t(int64_t(i) / D % H)];
  }
  return out;
}

// The code values kv_cache_write stores for x[T, H, D]: each row quantized with its head's scale.
std::vector<double> quantized(const std::vector<double>& x, const std::vector<double>& scales, int64_t H, int64_t D) {
  if (D == 0) return x;
  std::vector<double> row_scales(x.size() / size_t(D));
  for (size_t r = 0; r < row_scales.size(); ++r) row_scales[r] = scales[scales.size() == 1 ? 0 : r % size_t(H)];
  return golden::quantize(x, D, D, false, golden::QuantCodes::e4m3, false, row_scales).values;
}

struct KvWriteCase {
  int64_t T, num_blocks, block_size, H, D, Dv;
  bool per_head;
  double scale;  // small ones saturate the codes at 448
};

TEST_P(Conformance, KvCacheWriteFp8) {
  for (const KvWriteCase& c :
       {KvWriteCase{1, 1, 1, 1, 8, 8, false, 0.01}, KvWriteCase{7, 4, 16, 2, 64, 64, true, 0.004},
        KvWriteCase{100, 30, 5, 3, 72, 40, true, 0.02}, KvWriteCase{0, 2, 16, 1, 8, 8, false, 0.01},
        KvWriteCase{300, 40, 16, 8, 128, 128, true, 0.0005}}) {
    SCOPED_TRACE(fmt::format("T {} blocks {} block {} H {} D {} Dv {} per-head {} scale {}", c.T, c.num_blocks,
                             c.block_size, c.H, c.D, c.Dv, c.per_head, c.scale));
    std::vector<int64_t> slots(static_cast<size_t>(c.num_blocks * c.block_size));
    std::iota(slots.begin(), slots.end(), 0);
    std::shuffle(slots.begin(), slots.end(), rng());
    slots.resize(size_t(c.T));
    for (size_t t = 3; t < slots.size(); t += 7) slots[t] = -1;
    auto slot_mapping = ints({c.T}, slots);
    auto k = random({c.T, c.H, c.D}), v = random({c.T, c.H, c.Dv});
    auto k_cache = TestTensor::random({c.num_blocks, c.block_size, c.H, c.D}, DType::f8_e4m3, device(), rng(), -8, 8);
    auto v_cache = TestTensor::random({c.num_blocks, c.block_size, c.H, c.Dv}, DType::f8_e4m3, device(), rng(), -8, 8);
    const auto ks = head_scales(c.H, c.per_head, c.scale), vs = head_scales(c.H, c.per_head, c.scale * 1.5);
    auto k_scale = scale_tensor(ks, device()), v_scale = scale_tensor(vs, device());
    ops::kv_cache_write(k, v, slot_mapping, k_cache, v_cache, {&k_scale.view(), &v_scale.view()});
    const auto expected =
        golden::kv_cache_write(quantized(k.values(), ks, c.H, c.D), quantized(v.values(), vs, c.H, c.Dv), slots,
                               k_cache.values(), v_cache.values(), c.H, c.D, c.Dv);
    EXPECT_EQ(k_cache.download("k_cache"), expected.k_cache) << "k codes";
    EXPECT_EQ(v_cache.download("v_cache"), expected.v_cache) << "v codes";
  }
}

// A paged problem over fp8 caches: shuffled blocks, random codes in [-8, 8) and their scales.
struct Fp8Paged {
  int64_t max_blocks, num_blocks;
  std::vector<int64_t> table;
  int64_t unused_block;  // one no table row names
  std::vector<double> ks, vs;
};

Fp8Paged fp8_paged(const std::vector<int64_t>& seq_lens, int64_t block_size, int64_t Hkv, bool per_head,
                   std::mt19937_64& rng) {
  Fp8Paged p;
  p.max_blocks = 1;
  for (int64_t L : seq_lens) p.max_blocks = std::max(p.max_blocks, (L + block_size - 1) / block_size);
  const int64_t B = int64_t(seq_lens.size());
  p.num_blocks = B * p.max_blocks + 3;
  p.table.resize(static_cast<size_t>(p.num_blocks));
  std::iota(p.table.begin(), p.table.end(), 0);
  std::shuffle(p.table.begin(), p.table.end(), rng);
  p.unused_block = p.table.back();
  p.table.resize(size_t(B * p.max_blocks));
  p.ks = head_scales(Hkv, per_head, 0.12);
  p.vs = head_scales(Hkv, per_head, 0.09);
  return p;
}

struct Fp8DecodeCase {
  std::vector<int64_t> seq_lens;
  int64_t block_size, Hq, Hkv, D, Dv;
  bool per_head;
  AttentionParams params;
};

TEST_P(Conformance, PagedAttentionFp8Cache) {
  const double nan = std::nan("");
  for (const Fp8DecodeCase& c :
       {Fp8DecodeCase{{1, 17, 100, 0}, 16, 8, 1, 128, 128, false, {}},
        Fp8DecodeCase{{64, 65, 3}, 32, 8, 2, 64, 64, true, {.window_left = 20}},
        Fp8DecodeCase{{130}, 64, 4, 4, 256, 256, true, {.softcap = 8.0f}},
        Fp8DecodeCase{{7, 1000}, 16, 32, 8, 128, 128, true, {.scale = 0.2f}},
        Fp8DecodeCase{{200, 45}, 16, 24, 2, 128, 128, false, {}},
        Fp8DecodeCase{{90}, 32, 16, 1, 256, 256, true, {.softcap = 20.0f}},
        Fp8DecodeCase{{33, 300}, 16, 32, 1, 64, 64, false, {}}, Fp8DecodeCase{{50, 9}, 7, 4, 2, 96, 40, true, {}},
        Fp8DecodeCase{{}, 16, 4, 1, 64, 64, true, {}}}) {
    SCOPED_TRACE(fmt::format("seq_lens [{}] block {} Hq {} Hkv {} D {} Dv {} per-head {}", fmt::join(c.seq_lens, ","),
                             c.block_size, c.Hq, c.Hkv, c.D, c.Dv, c.per_head));
    const int64_t B = int64_t(c.seq_lens.size());
    const Fp8Paged p = fp8_paged(c.seq_lens, c.block_size, c.Hkv, c.per_head, rng());
    auto q = random({B, c.Hq, c.D});
    auto k_cache = TestTensor::random({p.num_blocks, c.block_size, c.Hkv, c.D}, DType::f8_e4m3, device(), rng(), -8, 8);
    auto v_cache =
        TestTensor::random({p.num_blocks, c.block_size, c.Hkv, c.Dv}, DType::f8_e4m3, device(), rng(), -8, 8);
    // NaN codes in a block no table row names: no query may read them.
    const int64_t last = p.unused_block * c.block_size * c.Hkv;
    k_cache = k_cache.with({{last * c.D + 3, nan}});
    v_cache = v_cache.with({{last * c.Dv + 1, nan}});
    auto k_scale = scale_tensor(p.ks, device()), v_scale = scale_tensor(p.vs, device());
    auto block_table = ints({B, p.max_blocks}, p.table);
    auto seq_lens = ints({B}, c.seq_lens);
    auto out = poisoned({B, c.Hq, c.Dv});
    ops::paged_attention(q, k_cache, v_cache, block_table, seq_lens, out, c.params, {&k_scale.view(), &v_scale.view()});
    const auto expected = golden::paged_attention(q.values(), dequantized(k_cache.values(), p.ks, c.Hkv, c.D),
                                                  dequantized(v_cache.values(), p.vs, c.Hkv, c.Dv), p.table, c.seq_lens,
                                                  c.Hq, c.Hkv, c.D, c.Dv, c.block_size, mask_of(c.params, c.D));
    expect_close(out.download("out"), expected, dtype(), "out");
  }
}

// Query heads far apart in magnitude (beyond f16's range where the dtype has it): a kernel that
// computes in f16 must bring each head into range without losing its precision. Each kv head's key
// scale is the inverse of its query heads' magnitude, so that the scores stay of order one: a
// kernel that rounds the dequantized keys to q's dtype is then within its tolerance too.
TEST_P(Conformance, PagedAttentionFp8CacheQueryRange) {
  const std::vector<double> factors =
      dtype() == DType::f16 ? std::vector<double>{1e3, 1e-4, 1, 3e-2} : std::vector<double>{1e7, 1e-7, 1, 1e30};
  const int64_t B = 2, Hq = 8, Hkv = 4, G = Hq / Hkv, D = 128, block_size = 16;
  const std::vector<int64_t> lens{300, 41};
  Fp8Paged p = fp8_paged(lens, block_size, Hkv, true, rng());
  for (int64_t h = 0; h < Hkv; ++h) p.ks[size_t(h)] = 0.12 / factors[size_t(h)];
  std::vector<double> q_values = random({B, Hq, D}).values();
  for (size_t i = 0; i < q_values.size(); ++i) q_values[i] *= factors[i / D % Hq / G];
  auto q = TestTensor::of({B, Hq, D}, dtype(), device(), q_values);
  auto k_cache = TestTensor::random({p.num_blocks, block_size, Hkv, D}, DType::f8_e4m3, device(), rng(), -8, 8);
  auto v_cache = TestTensor::random({p.num_blocks, block_size, Hkv, D}, DType::f8_e4m3, device(), rng(), -8, 8);
  auto k_scale = scale_tensor(p.ks, device()), v_scale = scale_tensor(p.vs, device());
  auto block_table = ints({B, p.max_blocks}, p.table);
  auto seq_lens = ints({B}, lens);
  auto out = poisoned({B, Hq, D});
  ops::paged_attention(q, k_cache, v_cache, block_table, seq_lens, out, {}, {&k_scale.view(), &v_scale.view()});
  const auto expected = golden::paged_attention(q.values(), dequantized(k_cache.values(), p.ks, Hkv, D),
                                                dequantized(v_cache.values(), p.vs, Hkv, D), p.table, lens, Hq, Hkv, D,
                                                D, block_size, mask_of({}, D));
  expect_close(out.download("out"), expected, dtype(), "out");
}

TEST_P(Conformance, PagedPrefillFp8Cache) {
  struct Case {
    std::vector<int64_t> new_tokens, seq_lens;
    int64_t block_size, Hq, Hkv, D;
    bool per_head;
    AttentionParams params;
  };
  for (const Case& c : {Case{{5, 1, 17}, {5, 40, 100}, 16, 4, 2, 64, true, {.causal = true}},
                        Case{{33, 7}, {33, 70}, 1, 8, 1, 128, false, {.causal = true, .softcap = 30.0f}},
                        Case{{64, 128, 1, 200}, {64, 300, 513, 200}, 64, 8, 2, 128, true, {.causal = true}},
                        Case{{100, 30}, {612, 30}, 16, 6, 2, 96, true, {.causal = true, .window_left = 64}}}) {
    SCOPED_TRACE(fmt::format("new [{}] seq_lens [{}] block {} Hq {} Hkv {} D {} per-head {}",
                             fmt::join(c.new_tokens, ","), fmt::join(c.seq_lens, ","), c.block_size, c.Hq, c.Hkv, c.D,
                             c.per_head));
    const int64_t B = int64_t(c.seq_lens.size());
    std::vector<int64_t> cu_q{0};
    for (int64_t n : c.new_tokens) cu_q.push_back(cu_q.back() + n);
    const int64_t Tq = cu_q.back(), max_q = *std::max_element(c.new_tokens.begin(), c.new_tokens.end());
    const Fp8Paged p = fp8_paged(c.seq_lens, c.block_size, c.Hkv, c.per_head, rng());
    auto q = random({Tq, c.Hq, c.D});
    auto k_cache = TestTensor::random({p.num_blocks, c.block_size, c.Hkv, c.D}, DType::f8_e4m3, device(), rng(), -8, 8);
    auto v_cache = TestTensor::random({p.num_blocks, c.block_size, c.Hkv, c.D}, DType::f8_e4m3, device(), rng(), -8, 8);
    auto k_scale = scale_tensor(p.ks, device()), v_scale = scale_tensor(p.vs, device());
    auto block_table = ints({B, p.max_blocks}, p.table);
    auto seq_lens = ints({B}, c.seq_lens);
    auto cu_seqlens_q = ints({B + 1}, cu_q);
    auto out = poisoned({Tq, c.Hq, c.D});
    auto lse = TestTensor::poisoned({c.Hq, Tq}, DType::f32, device());
    ops::paged_prefill(q, k_cache, v_cache, cu_seqlens_q, block_table, seq_lens, max_q, out, c.params, &lse.view(),
                       {&k_scale.view(), &v_scale.view()});
    const auto expected = golden::paged_prefill(
        q.values(), dequantized(k_cache.values(), p.ks, c.Hkv, c.D), dequantized(v_cache.values(), p.vs, c.Hkv, c.D),
        cu_q, p.table, c.seq_lens, c.Hq, c.Hkv, c.D, c.D, c.block_size, mask_of(c.params, c.D));
    expect_close(out.download("out"), expected.out, dtype(), "out");
    // The cached values reach the scores rounded to q's dtype (docs/ops.md), and so does the lse.
    expect_close(lse.download("lse"), expected.lse, dtype(), "lse");
  }
}

}  // namespace
}  // namespace xhal::test

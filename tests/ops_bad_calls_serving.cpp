// The catalogue's serving ops: paged_prefill, kv_cache_write, merge_attention_states, argmax,
// top_k, sample, quantize, dequantize, linear_fp8, linear_int8 and the fp8 KV cache's scales
// (ops_bad_calls.hpp).
#include <utility>
#include <vector>

#include "ops_bad_calls.hpp"

namespace xhal {
namespace {
// An f8_e4m3 cache over `out` from float `offset` on (its codes do not matter to validation).
TensorView fp8_cache(Buffers& b, int64_t offset, std::vector<int64_t> shape) {
  return TensorView(b.out.data() + offset, DType::f8_e4m3, std::move(shape));
}
}  // namespace

std::vector<BadCall> serving_bad_calls() {
  using V = std::vector<int64_t>;
  return {
      // paged_prefill
      {"paged_prefill cu_seqlens_q dtype", Errc::invalid_argument, "paged_prefill", "cu_seqlens_q",
       [](Buffers& b) {
         ops::paged_prefill(b.f32({6, 4, 8}), b.f32({4, 16, 2, 8}), b.f32({4, 16, 2, 8}), b.i64({3}), b.i32({2, 2}),
                            b.i32({2}), 4, b.o32({6, 4, 8}));
       }},
      {"paged_prefill table batch", Errc::invalid_argument, "paged_prefill", "block_table",
       [](Buffers& b) {
         ops::paged_prefill(b.f32({6, 4, 8}), b.f32({4, 16, 2, 8}), b.f32({4, 16, 2, 8}), b.i32({3}), b.i32({3, 2}),
                            b.i32({2}), 4, b.o32({6, 4, 8}));
       }},
      {"paged_prefill lse shape", Errc::invalid_argument, "paged_prefill", "lse",
       [](Buffers& b) {
         const TensorView lse(b.out.data() + 1024, DType::f32, V{6, 4});
         ops::paged_prefill(b.f32({6, 4, 8}), b.f32({4, 16, 2, 8}), b.f32({4, 16, 2, 8}), b.i32({3}), b.i32({2, 2}),
                            b.i32({2}), 4, b.o32({6, 4, 8}), {}, &lse);
       }},
      {"paged_prefill max_seqlen_q", Errc::invalid_argument, "paged_prefill", "max_seqlen_q",
       [](Buffers& b) {
         ops::paged_prefill(b.f32({6, 4, 8}), b.f32({4, 16, 2, 8}), b.f32({4, 16, 2, 8}), b.i32({3}), b.i32({2, 2}),
                            b.i32({2}), -1, b.o32({6, 4, 8}));
       }},
      {"paged_prefill offsets past q", Errc::invalid_argument, "paged_prefill", "cu_seqlens_q",
       [](Buffers& b) {
         std::vector<int32_t> cu{0, 4, 9}, table{0, 1, 2, 3}, lens{4, 5};
         ops::paged_prefill(b.f32({6, 4, 8}), b.f32({4, 16, 2, 8}), b.f32({4, 16, 2, 8}),
                            TensorView(cu.data(), DType::i32, V{3}), TensorView(table.data(), DType::i32, V{2, 2}),
                            TensorView(lens.data(), DType::i32, V{2}), 5, b.o32({6, 4, 8}));
       }},
      {"paged_prefill block index out of range", Errc::invalid_argument, "paged_prefill", "block_table",
       [](Buffers& b) {
         std::vector<int32_t> cu{0, 4, 6}, table{0, 1, 2, 99}, lens{4, 20};
         ops::paged_prefill(b.f32({6, 4, 8}), b.f32({4, 16, 2, 8}), b.f32({4, 16, 2, 8}),
                            TensorView(cu.data(), DType::i32, V{3}), TensorView(table.data(), DType::i32, V{2, 2}),
                            TensorView(lens.data(), DType::i32, V{2}), 4, b.o32({6, 4, 8}));
       }},
      // quantize, dequantize
      {"quantize q dtype", Errc::invalid_argument, "quantize", "q",
       [](Buffers& b) {
         ops::quantize(b.f32({4, 64}), b.bf16({4, 64}), TensorView(b.out.data(), DType::f32, V{1}));
       }},
      {"quantize scale shape", Errc::invalid_argument, "quantize", "scale",
       [](Buffers& b) {
         ops::quantize(b.f32({4, 64}), TensorView(b.h.data(), DType::f8_e4m3, V{4, 64}),
                       TensorView(b.out.data(), DType::f32, V{4, 2}), {ops::QuantizeParams::Granularity::per_row});
       }},
      {"quantize block", Errc::invalid_argument, "quantize", "block",
       [](Buffers& b) {
         ops::quantize(b.f32({4, 64}), TensorView(b.h.data(), DType::f8_e4m3, V{4, 64}),
                       TensorView(b.out.data(), DType::f32, V{4, 1}), {ops::QuantizeParams::Granularity::per_block, 0});
       }},
      {"quantize granularity", Errc::invalid_argument, "quantize", "granularity",
       [](Buffers& b) {
         ops::quantize(b.f32({4, 64}), TensorView(b.h.data(), DType::f8_e4m3, V{4, 64}),
                       TensorView(b.out.data(), DType::f32, V{1}), {ops::QuantizeParams::Granularity(7)});
       }},
      {"dequantize out dtype", Errc::invalid_argument, "dequantize", "out",
       [](Buffers& b) {
         ops::dequantize(TensorView(b.h.data(), DType::f8_e5m2, V{4, 64}), b.f32({1}), b.i32({4, 64}));
       }},
      {"dequantize q shape", Errc::invalid_argument, "dequantize", "q",
       [](Buffers& b) {
         ops::dequantize(TensorView(b.h.data(), DType::f8_e5m2, V{4, 63}), b.f32({1}), b.o32({4, 64}));
       }},
      // linear_fp8
      {"linear_fp8 x dtype", Errc::invalid_argument, "linear_fp8", "x",
       [](Buffers& b) {
         ops::linear_fp8(b.bf16({4, 64}), b.f32({1}), TensorView(b.h.data(), DType::f8_e4m3, V{8, 64}), b.f32({1}),
                         nullptr, b.o32({4, 8}));
       }},
      {"linear_fp8 w in features", Errc::invalid_argument, "linear_fp8", "w",
       [](Buffers& b) {
         ops::linear_fp8(TensorView(b.h.data(), DType::f8_e4m3, V{4, 64}), b.f32({1}),
                         TensorView(b.h.data() + 512, DType::f8_e4m3, V{8, 32}), b.f32({1}), nullptr, b.o32({4, 8}));
       }},
      {"linear_fp8 x_scale rows", Errc::invalid_argument, "linear_fp8", "x_scale",
       [](Buffers& b) {
         ops::linear_fp8(TensorView(b.h.data(), DType::f8_e4m3, V{4, 64}), b.f32({5, 1}),
                         TensorView(b.h.data() + 512, DType::f8_e4m3, V{8, 64}), b.f32({1}), nullptr, b.o32({4, 8}));
       }},
      {"linear_fp8 w_scale dtype", Errc::invalid_argument, "linear_fp8", "w_scale",
       [](Buffers& b) {
         ops::linear_fp8(TensorView(b.h.data(), DType::f8_e4m3, V{4, 64}), b.f32({1}),
                         TensorView(b.h.data() + 512, DType::f8_e4m3, V{8, 64}), b.bf16({8, 1}), nullptr,
                         b.o32({4, 8}));
       }},
      {"linear_fp8 out dtype", Errc::invalid_argument, "linear_fp8", "out",
       [](Buffers& b) {
         ops::linear_fp8(TensorView(b.h.data(), DType::f8_e4m3, V{4, 64}), b.f32({1}),
                         TensorView(b.h.data() + 512, DType::f8_e4m3, V{8, 64}), b.f32({1}), nullptr,
                         TensorView(b.out.data(), DType::f8_e4m3, V{4, 8}));
       }},
      {"linear_int8 w dtype", Errc::invalid_argument, "linear_int8", "w",
       [](Buffers& b) {
         ops::linear_int8(TensorView(b.h.data(), DType::i8, V{4, 64}), b.f32({1}),
                          TensorView(b.h.data() + 512, DType::f8_e4m3, V{8, 64}), b.f32({1}), nullptr, b.o32({4, 8}));
       }},
      {"linear_int8 K past the int32 bound", Errc::invalid_argument, "linear_int8", "x",
       [](Buffers& b) {
         ops::linear_int8(TensorView(b.h.data(), DType::i8, V{1, XHAL_LINEAR_INT8_MAX_K + 1}), b.f32({1}),
                          TensorView(b.h.data(), DType::i8, V{1, XHAL_LINEAR_INT8_MAX_K + 1}), b.f32({1}), nullptr,
                          b.o32({1, 1}));
       }},
      {"linear_fp8 bias dtype", Errc::invalid_argument, "linear_fp8", "bias",
       [](Buffers& b) {
         const TensorView bias = b.bf16({8});
         ops::linear_fp8(TensorView(b.h.data(), DType::f8_e4m3, V{4, 64}), b.f32({1}),
                         TensorView(b.h.data() + 512, DType::f8_e4m3, V{8, 64}), b.f32({1}), &bias, b.o32({4, 8}));
       }},
      // argmax
      {"argmax empty row", Errc::invalid_argument, "argmax", "logits",
       [](Buffers& b) {
         ops::argmax(b.f32({4, 0}), TensorView(b.out.data(), DType::i64, {4}));
       }},
      {"argmax index dtype", Errc::invalid_argument, "argmax", "indices",
       [](Buffers& b) {
         ops::argmax(b.f32({4, 64}), b.o32({4}));
       }},
      {"argmax values shape", Errc::invalid_argument, "argmax", "values",
       [](Buffers& b) {
         const TensorView values = b.o32({5});
         ops::argmax(b.f32({4, 64}), TensorView(b.out.data() + 64, DType::i64, {4}), &values);
       }},
      // top_k
      {"top_k k above V", Errc::invalid_argument, "top_k", "values",
       [](Buffers& b) {
         ops::top_k(b.f32({4, 8}), b.o32({4, 9}), TensorView(b.out.data() + 64, DType::i64, {4, 9}));
       }},
      {"top_k k above the largest", Errc::invalid_argument, "top_k", "values",
       [](Buffers& b) {
         ops::top_k(TensorView(b.f.data(), DType::f32, {1, XHAL_TOP_K_MAX_K + 1}),
                    TensorView(b.out.data(), DType::f32, {1, XHAL_TOP_K_MAX_K + 1}),
                    TensorView(b.out.data() + 8192, DType::i32, {1, XHAL_TOP_K_MAX_K + 1}));
       }},
      {"top_k values dtype", Errc::invalid_argument, "top_k", "values",
       [](Buffers& b) {
         ops::top_k(b.f32({4, 64}), TensorView(b.out.data(), DType::bf16, {4, 2}),
                    TensorView(b.out.data() + 64, DType::i64, {4, 2}));
       }},
      {"top_k indices k", Errc::invalid_argument, "top_k", "indices",
       [](Buffers& b) {
         ops::top_k(b.f32({4, 64}), b.o32({4, 2}), TensorView(b.out.data() + 64, DType::i64, {4, 3}));
       }},
      {"top_k indices dtype", Errc::invalid_argument, "top_k", "indices",
       [](Buffers& b) {
         ops::top_k(b.f32({4, 64}), b.o32({4, 2}), TensorView(b.out.data() + 64, DType::f32, {4, 2}));
       }},
      {"top_k indices rows", Errc::invalid_argument, "top_k", "indices",
       [](Buffers& b) {
         ops::top_k(b.f32({4, 64}), b.o32({4, 2}), TensorView(b.out.data() + 64, DType::i64, {3, 2}));
       }},
      // sample
      {"sample logits rank", Errc::invalid_argument, "sample", "logits",
       [](Buffers& b) { ops::sample(b.f32({64}), TensorView(b.out.data(), DType::i64, {1})); }},
      {"sample empty vocabulary", Errc::invalid_argument, "sample", "logits",
       [](Buffers& b) {
         ops::sample(b.f32({4, 0}), TensorView(b.out.data(), DType::i64, {4}));
       }},
      {"sample tokens dtype", Errc::invalid_argument, "sample", "tokens",
       [](Buffers& b) {
         ops::sample(b.f32({4, 64}), b.o32({4}));
       }},
      {"sample tokens shape", Errc::invalid_argument, "sample", "tokens",
       [](Buffers& b) {
         ops::sample(b.f32({4, 64}), TensorView(b.out.data(), DType::i64, {5}));
       }},
      {"sample temperature", Errc::invalid_argument, "sample", "temperature",
       [](Buffers& b) {
         ops::sample(b.f32({4, 64}), TensorView(b.out.data(), DType::i64, {4}), {-1.0f, 0, 1.0f, 0.0f, 0, 0});
       }},
      {"sample top_k", Errc::invalid_argument, "sample", "top_k",
       [](Buffers& b) {
         ops::sample(b.f32({4, 64}), TensorView(b.out.data(), DType::i64, {4}), {1.0f, -1, 1.0f, 0.0f, 0, 0});
       }},
      {"sample top_p", Errc::invalid_argument, "sample", "top_p",
       [](Buffers& b) {
         ops::sample(b.f32({4, 64}), TensorView(b.out.data(), DType::i64, {4}), {1.0f, 0, 0.0f, 0.0f, 0, 0});
       }},
      {"sample min_p", Errc::invalid_argument, "sample", "min_p",
       [](Buffers& b) {
         ops::sample(b.f32({4, 64}), TensorView(b.out.data(), DType::i64, {4}), {1.0f, 0, 1.0f, 1.5f, 0, 0});
       }},
      {"sample per-row top_k dtype", Errc::invalid_argument, "sample", "top_k",
       [](Buffers& b) {
         const TensorView top_k = b.f32({4});
         ops::sample(b.f32({4, 64}), TensorView(b.out.data(), DType::i64, {4}), {}, {nullptr, &top_k});
       }},
      {"sample per-row seeds shape", Errc::invalid_argument, "sample", "seeds",
       [](Buffers& b) {
         const TensorView seeds = b.i64({3});
         ops::sample(b.f32({4, 64}), TensorView(b.out.data(), DType::i64, {4}), {},
                     {nullptr, nullptr, nullptr, nullptr, &seeds});
       }},
      // merge_attention_states
      {"lse_a tokens", Errc::invalid_argument, "merge_attention_states", "lse_a",
       [](Buffers& b) {
         ops::merge_attention_states(b.f32({4, 2, 8}), b.f32({2, 5}), b.f32({4, 2, 8}), b.f32({2, 4}),
                                     b.o32({4, 2, 8}));
       }},
      {"out_b dtype", Errc::invalid_argument, "merge_attention_states", "out_b",
       [](Buffers& b) {
         ops::merge_attention_states(b.f32({4, 2, 8}), b.f32({2, 4}), b.bf16({4, 2, 8}), b.f32({2, 4}),
                                     b.o32({4, 2, 8}));
       }},
      {"out shape", Errc::invalid_argument, "merge_attention_states", "out",
       [](Buffers& b) {
         ops::merge_attention_states(b.f32({4, 2, 8}), b.f32({2, 4}), b.f32({4, 2, 8}), b.f32({2, 4}),
                                     b.o32({4, 2, 9}));
       }},
      {"lse dtype", Errc::invalid_argument, "merge_attention_states", "lse",
       [](Buffers& b) {
         auto lse = TensorView(b.h.data(), DType::bf16, {2, 4});
         ops::merge_attention_states(b.f32({4, 2, 8}), b.f32({2, 4}), b.f32({4, 2, 8}), b.f32({2, 4}), b.o32({4, 2, 8}),
                                     &lse);
       }},
      // kv_cache_write
      {"k head dim", Errc::invalid_argument, "kv_cache_write", "k",
       [](Buffers& b) {
         ops::kv_cache_write(b.f32({4, 2, 9}), b.f32({4, 2, 8}), b.i32({4}), b.o32({3, 16, 2, 8}),
                             TensorView(b.out.data() + 2048, DType::f32, {3, 16, 2, 8}));
       }},
      {"slot dtype", Errc::invalid_argument, "kv_cache_write", "slot_mapping",
       [](Buffers& b) {
         ops::kv_cache_write(b.f32({4, 2, 8}), b.f32({4, 2, 8}), b.f32({4}), b.o32({3, 16, 2, 8}),
                             TensorView(b.out.data() + 2048, DType::f32, {3, 16, 2, 8}));
       }},
      {"v_cache blocks", Errc::invalid_argument, "kv_cache_write", "v_cache",
       [](Buffers& b) {
         ops::kv_cache_write(b.f32({4, 2, 8}), b.f32({4, 2, 8}), b.i32({4}), b.o32({3, 16, 2, 8}),
                             TensorView(b.out.data() + 2048, DType::f32, {4, 16, 2, 8}));
       }},
      {"slot out of range", Errc::invalid_argument, "kv_cache_write", "slot_mapping",
       [](Buffers& b) {
         b.l[1] = 48;  // 3 blocks of 16 slots: 0..47
         ops::kv_cache_write(b.f32({4, 2, 8}), b.f32({4, 2, 8}), b.i64({4}), b.o32({3, 16, 2, 8}),
                             TensorView(b.out.data() + 2048, DType::f32, {3, 16, 2, 8}));
       }},
      // the fp8 KV cache's scales
      {"fp8 cache without scales", Errc::invalid_argument, "kv_cache_write", "k_scale",
       [](Buffers& b) {
         ops::kv_cache_write(b.f32({4, 2, 8}), b.f32({4, 2, 8}), b.i32({4}), fp8_cache(b, 0, {3, 16, 2, 8}),
                             fp8_cache(b, 2048, {3, 16, 2, 8}), ops::KvCacheScales{});
       }},
      {"scales with an f32 cache", Errc::invalid_argument, "kv_cache_write", "k_scale",
       [](Buffers& b) {
         const TensorView scale = b.f32({1});
         ops::kv_cache_write(b.f32({4, 2, 8}), b.f32({4, 2, 8}), b.i32({4}), b.o32({3, 16, 2, 8}),
                             TensorView(b.out.data() + 2048, DType::f32, {3, 16, 2, 8}), {&scale, &scale});
       }},
      {"a scale for 3 of 2 kv heads", Errc::invalid_argument, "kv_cache_write", "v_scale",
       [](Buffers& b) {
         const TensorView one = b.f32({1}), three = b.f32({3});
         ops::kv_cache_write(b.f32({4, 2, 8}), b.f32({4, 2, 8}), b.i32({4}), fp8_cache(b, 0, {3, 16, 2, 8}),
                             fp8_cache(b, 2048, {3, 16, 2, 8}), {&one, &three});
       }},
      {"an e5m2 cache", Errc::invalid_argument, "paged_attention", "k_cache",
       [](Buffers& b) {
         const TensorView scale = b.f32({1});
         ops::paged_attention(b.f32({2, 4, 8}), TensorView(b.h.data(), DType::f8_e5m2, {4, 16, 2, 8}),
                              TensorView(b.h.data(), DType::f8_e5m2, {4, 16, 2, 8}), b.i32({2, 2}), b.i32({2}),
                              b.o32({2, 4, 8}), {}, {&scale, &scale});
       }},
      {"fp8 cache without a value scale", Errc::invalid_argument, "paged_attention", "v_scale",
       [](Buffers& b) {
         const TensorView scale = b.f32({2});
         ops::paged_attention(b.bf16({2, 4, 8}), TensorView(b.h.data(), DType::f8_e4m3, {4, 16, 2, 8}),
                              TensorView(b.h.data(), DType::f8_e4m3, {4, 16, 2, 8}), b.i32({2, 2}), b.i32({2}),
                              TensorView(b.out.data(), DType::bf16, {2, 4, 8}), {}, {&scale, nullptr});
       }},
      {"bf16 scale", Errc::invalid_argument, "paged_prefill", "k_scale",
       [](Buffers& b) {
         const TensorView scale = b.bf16({1});
         ops::paged_prefill(b.f32({3, 4, 8}), TensorView(b.h.data(), DType::f8_e4m3, {4, 16, 2, 8}),
                            TensorView(b.h.data(), DType::f8_e4m3, {4, 16, 2, 8}), b.i32({3}), b.i32({2, 2}),
                            b.i32({2}), 3, b.o32({3, 4, 8}), {}, nullptr, {&scale, &scale});
       }},
  };
}

}  // namespace xhal

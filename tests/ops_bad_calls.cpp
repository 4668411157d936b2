// The catalogue of bad calls, op by op (ops_bad_calls.hpp).
#include "ops_bad_calls.hpp"

#include <cmath>
#include <limits>
#include <vector>

namespace xhal {

const std::vector<BadCall>& bad_calls() {
  using V = std::vector<int64_t>;
  static const std::vector<BadCall> calls = [] {
    std::vector<BadCall> all = {
      // attention
      {"q rank", Errc::invalid_argument, "attention", "q",
       [](Buffers& b) {
         ops::attention(b.f32({2, 4, 8}), b.f32({1, 4, 2, 8}), b.f32({1, 4, 2, 8}), b.o32({1, 4, 2, 8}));
       }},
      {"dtype mismatch", Errc::invalid_argument, "attention", "k",
       [](Buffers& b) {
         ops::attention(b.f32({1, 4, 2, 8}), b.bf16({1, 4, 2, 8}), b.f32({1, 4, 2, 8}), b.o32({1, 4, 2, 8}));
       }},
      {"head dim mismatch", Errc::invalid_argument, "attention", "k",
       [](Buffers& b) {
         ops::attention(b.f32({1, 4, 2, 8}), b.f32({1, 4, 2, 16}), b.f32({1, 4, 2, 8}), b.o32({1, 4, 2, 8}));
       }},
      {"Hq % Hkv", Errc::invalid_argument, "attention", "k",
       [](Buffers& b) {
         ops::attention(b.f32({1, 4, 6, 8}), b.f32({1, 4, 4, 8}), b.f32({1, 4, 4, 8}), b.o32({1, 4, 6, 8}));
       }},
      {"out shape", Errc::invalid_argument, "attention", "out",
       [](Buffers& b) {
         ops::attention(b.f32({1, 4, 2, 8}), b.f32({1, 4, 2, 8}), b.f32({1, 4, 2, 8}), b.o32({1, 5, 2, 8}));
       }},
      {"inner stride", Errc::invalid_argument, "attention", "q",
       [](Buffers& b) {
         TensorView q(b.f.data(), DType::f32, V{1, 4, 2, 8}, V{128, 32, 16, 2});
         ops::attention(q, b.f32({1, 4, 2, 8}), b.f32({1, 4, 2, 8}), b.o32({1, 4, 2, 8}));
       }},
      {"null data", Errc::invalid_argument, "attention", "v",
       [](Buffers& b) {
         ops::attention(b.f32({1, 4, 2, 8}), b.f32({1, 4, 2, 8}), TensorView(nullptr, DType::f32, V{1, 4, 2, 8}),
                        b.o32({1, 4, 2, 8}));
       }},
      {"wrong device", Errc::invalid_argument, "attention", "q",
       [](Buffers& b) {
         TensorView q(b.f.data(), DType::f32, V{1, 4, 2, 8}, Device{DeviceType::cuda, 0});
         ops::attention(q, b.f32({1, 4, 2, 8}), b.f32({1, 4, 2, 8}), b.o32({1, 4, 2, 8}));
       }},
      {"lse dtype", Errc::invalid_argument, "attention", "lse",
       [](Buffers& b) {
         auto lse = b.bf16({1, 2, 4});
         ops::attention(b.f32({1, 4, 2, 8}), b.f32({1, 4, 2, 8}), b.f32({1, 4, 2, 8}), b.o32({1, 4, 2, 8}), {}, &lse);
       }},
      {"window", Errc::invalid_argument, "attention", "params.window_left",
       [](Buffers& b) {
         ops::attention(b.f32({1, 4, 2, 8}), b.f32({1, 4, 2, 8}), b.f32({1, 4, 2, 8}), b.o32({1, 4, 2, 8}),
                        {.window_left = -5});
       }},
      {"softcap", Errc::invalid_argument, "attention", "params.softcap",
       [](Buffers& b) {
         ops::attention(b.f32({1, 4, 2, 8}), b.f32({1, 4, 2, 8}), b.f32({1, 4, 2, 8}), b.o32({1, 4, 2, 8}),
                        {.softcap = -1});
       }},
      {"scale NaN", Errc::invalid_argument, "attention", "params.scale",
       [](Buffers& b) {
         ops::attention(b.f32({1, 4, 2, 8}), b.f32({1, 4, 2, 8}), b.f32({1, 4, 2, 8}), b.o32({1, 4, 2, 8}),
                        {.scale = std::nanf("")});
       }},
      {"f64 is not a compute dtype", Errc::invalid_argument, "attention", "q",
       [](Buffers& b) {
         TensorView q(b.f.data(), DType::f64, V{1, 2, 2, 8});
         ops::attention(q, q, q, q);
       }},
      {"offset overflow", Errc::invalid_argument, "attention", "q",
       [](Buffers& b) {
         // 2^26 elements (a view holds no more than 2^63 bytes), whose furthest offset is ~2^70.
         TensorView q(b.f.data(), DType::f32, V{int64_t(1) << 20, 4, 2, 8}, V{int64_t(1) << 50, 16, 8, 1});
         ops::attention(q, b.f32({1, 4, 2, 8}), b.f32({1, 4, 2, 8}), b.o32({1, 4, 2, 8}));
       }},
      {"most negative stride", Errc::invalid_argument, "attention", "q",
       [](Buffers& b) {
         // Its magnitude does not fit in int64; found by the C API fuzz target.
         TensorView q(b.f.data(), DType::f32, V{2, 4, 2, 8}, V{std::numeric_limits<int64_t>::min(), 16, 8, 1});
         ops::attention(q, b.f32({2, 4, 2, 8}), b.f32({2, 4, 2, 8}), b.o32({2, 4, 2, 8}));
       }},
      {"furthest element at the int64 limit", Errc::invalid_argument, "attention", "q",
       [](Buffers& b) {
         TensorView q(b.f.data(), DType::f32, V{2, 1, 1, 8}, V{std::numeric_limits<int64_t>::max() - 7, 8, 8, 1});
         ops::attention(q, b.f32({2, 1, 1, 8}), b.f32({2, 1, 1, 8}), b.o32({2, 1, 1, 8}));
       }},
      {"device absent", Errc::backend_unavailable, "attention", "out",
       [](Buffers& b) {
         Device absent{DeviceType::ze, 0};  // no ze plugin in this build
         TensorView t(b.f.data(), DType::f32, V{1, 4, 2, 8}, absent),
             out(b.out.data(), DType::f32, V{1, 4, 2, 8}, absent);
         ops::attention(t, t, t, out);
       }},
      // attention_varlen
      {"cu_seqlens dtype", Errc::invalid_argument, "attention_varlen", "cu_seqlens_q",
       [](Buffers& b) {
         ops::attention_varlen(b.f32({8, 2, 8}), b.f32({8, 2, 8}), b.f32({8, 2, 8}), b.i64({2}), b.i32({2}), 8, 8,
                               b.o32({8, 2, 8}));
       }},
      {"cu_seqlens length", Errc::invalid_argument, "attention_varlen", "cu_seqlens_k",
       [](Buffers& b) {
         ops::attention_varlen(b.f32({8, 2, 8}), b.f32({8, 2, 8}), b.f32({8, 2, 8}), b.i32({2}), b.i32({3}), 8, 8,
                               b.o32({8, 2, 8}));
       }},
      {"max_seqlen", Errc::invalid_argument, "attention_varlen", "max_seqlen_q",
       [](Buffers& b) {
         ops::attention_varlen(b.f32({8, 2, 8}), b.f32({8, 2, 8}), b.f32({8, 2, 8}), b.i32({2}), b.i32({2}), -1, 8,
                               b.o32({8, 2, 8}));
       }},
      {"cu_seqlens contents", Errc::invalid_argument, "attention_varlen", "cu_seqlens_q",
       [](Buffers& b) {
         std::vector<int32_t> cu{0, 9};  // 9 > 8 tokens
         std::vector<int32_t> cu_k{0, 8};
         ops::attention_varlen(b.f32({8, 2, 8}), b.f32({8, 2, 8}), b.f32({8, 2, 8}),
                               TensorView(cu.data(), DType::i32, V{2}), TensorView(cu_k.data(), DType::i32, V{2}), 9, 8,
                               b.o32({8, 2, 8}));
       }},
      // paged_attention
      {"block_table dtype", Errc::invalid_argument, "paged_attention", "block_table",
       [](Buffers& b) {
         ops::paged_attention(b.f32({2, 4, 8}), b.f32({4, 16, 2, 8}), b.f32({4, 16, 2, 8}), b.i64({2, 2}), b.i32({2}),
                              b.o32({2, 4, 8}));
       }},
      {"cache shapes", Errc::invalid_argument, "paged_attention", "v_cache",
       [](Buffers& b) {
         ops::paged_attention(b.f32({2, 4, 8}), b.f32({4, 16, 2, 8}), b.f32({4, 8, 2, 8}), b.i32({2, 2}), b.i32({2}),
                              b.o32({2, 4, 8}));
       }},
      {"block index out of range", Errc::invalid_argument, "paged_attention", "block_table",
       [](Buffers& b) {
         std::vector<int32_t> table{0, 1, 2, 99}, lens{20, 20};
         ops::paged_attention(b.f32({2, 4, 8}), b.f32({4, 16, 2, 8}), b.f32({4, 16, 2, 8}),
                              TensorView(table.data(), DType::i32, V{2, 2}), TensorView(lens.data(), DType::i32, V{2}),
                              b.o32({2, 4, 8}));
       }},
      {"seq_lens beyond the table", Errc::invalid_argument, "paged_attention", "seq_lens",
       [](Buffers& b) {
         std::vector<int32_t> table{0, 1, 2, 3}, lens{20, 33};
         ops::paged_attention(b.f32({2, 4, 8}), b.f32({4, 16, 2, 8}), b.f32({4, 16, 2, 8}),
                              TensorView(table.data(), DType::i32, V{2, 2}), TensorView(lens.data(), DType::i32, V{2}),
                              b.o32({2, 4, 8}));
       }},
      // rms_norm, fused_add_rms_norm
      {"weight size", Errc::invalid_argument, "rms_norm", "weight",
       [](Buffers& b) {
         ops::rms_norm(b.f32({4, 64}), b.f32({63}), 1e-6f, b.o32({4, 64}));
       }},
      {"out shape", Errc::invalid_argument, "rms_norm", "out",
       [](Buffers& b) {
         ops::rms_norm(b.f32({4, 64}), b.f32({64}), 1e-6f, b.o32({64, 4}));
       }},
      {"eps", Errc::invalid_argument, "rms_norm", "eps",
       [](Buffers& b) {
         ops::rms_norm(b.f32({4, 64}), b.f32({64}), -1.0f, b.o32({4, 64}));
       }},
      {"rank 0", Errc::invalid_argument, "rms_norm", "x",
       [](Buffers& b) { ops::rms_norm(b.f32({}), b.f32({1}), 1e-6f, b.o32({})); }},
      {"residual shape", Errc::invalid_argument, "fused_add_rms_norm", "residual",
       [](Buffers& b) {
         ops::fused_add_rms_norm(b.f32({4, 64}), b.f32({4, 32}), b.f32({64}), 1e-6f, b.o32({4, 64}));
       }},
      {"residual dtype", Errc::invalid_argument, "fused_add_rms_norm", "residual",
       [](Buffers& b) {
         ops::fused_add_rms_norm(b.f32({4, 64}), b.bf16({4, 64}), b.f32({64}), 1e-6f, b.o32({4, 64}));
       }},
      // swiglu
      {"up shape", Errc::invalid_argument, "swiglu", "up",
       [](Buffers& b) {
         ops::swiglu(b.f32({4, 64}), b.f32({4, 65}), b.o32({4, 64}));
       }},
      {"odd packed dim", Errc::invalid_argument, "swiglu_packed", "x",
       [](Buffers& b) {
         ops::swiglu_packed(b.f32({4, 65}), b.o32({4, 32}));
       }},
      {"packed out", Errc::invalid_argument, "swiglu_packed", "out",
       [](Buffers& b) {
         ops::swiglu_packed(b.f32({4, 64}), b.o32({4, 64}));
       }},
      // layer_norm
      {"layer_norm bias size", Errc::invalid_argument, "layer_norm", "bias",
       [](Buffers& b) {
         const TensorView bias = b.f32({63});
         ops::layer_norm(b.f32({4, 64}), b.f32({64}), &bias, 1e-5f, b.o32({4, 64}));
       }},
      {"layer_norm eps", Errc::invalid_argument, "layer_norm", "eps",
       [](Buffers& b) { ops::layer_norm(b.f32({4, 64}), b.f32({64}), nullptr, -1.0f, b.o32({4, 64})); }},
      // softmax
      {"softmax out shape", Errc::invalid_argument, "softmax", "out",
       [](Buffers& b) { ops::softmax(b.f32({4, 64}), b.o32({4, 63})); }},
      {"softmax out dtype", Errc::invalid_argument, "softmax", "out",
       [](Buffers& b) { ops::softmax(b.f32({4, 64}), TensorView(b.out.data(), DType::f16, {4, 64})); }},
      {"softmax integer x", Errc::invalid_argument, "softmax", "x",
       [](Buffers& b) {
         ops::softmax(b.i32({4, 64}), TensorView(b.out.data(), DType::i32, {4, 64}));
       }},
      {"softmax scalar x", Errc::invalid_argument, "softmax", "x",
       [](Buffers& b) { ops::softmax(b.f32({}), b.o32({})); }},
      // add, mul
      {"add y shape", Errc::invalid_argument, "add", "y",
       [](Buffers& b) { ops::add(b.f32({4, 64}), b.f32({4, 63}), b.o32({4, 64})); }},
      {"add y row size", Errc::invalid_argument, "add", "y",
       [](Buffers& b) { ops::add(b.f32({4, 64}), b.f32({63}), b.o32({4, 64})); }},
      {"mul y dtype", Errc::invalid_argument, "mul", "y",
       [](Buffers& b) { ops::mul(b.f32({4, 64}), b.bf16({4, 64}), b.o32({4, 64})); }},
      {"mul out shape", Errc::invalid_argument, "mul", "out",
       [](Buffers& b) { ops::mul(b.f32({4, 64}), b.f32({64}), b.o32({64})); }},
      // gelu_and_mul
      {"gelu up dtype", Errc::invalid_argument, "gelu_and_mul", "up",
       [](Buffers& b) {
         ops::gelu_and_mul(b.f32({4, 64}), b.bf16({4, 64}), b.o32({4, 64}));
       }},
      {"gelu approximation", Errc::invalid_argument, "gelu_and_mul", "approximation",
       [](Buffers& b) {
         ops::gelu_and_mul(b.f32({4, 64}), b.f32({4, 64}), b.o32({4, 64}), ops::GeluApproximation(2));
       }},
      {"gelu packed out", Errc::invalid_argument, "gelu_and_mul_packed", "out",
       [](Buffers& b) {
         ops::gelu_and_mul_packed(b.f32({4, 64}), b.o32({4, 31}), ops::GeluApproximation::tanh);
       }},
      // rope
      {"positions dtype", Errc::invalid_argument, "rope", "positions",
       [](Buffers& b) {
         ops::rope(b.o32({4, 2, 64}), b.o32({4, 1, 64}), b.f32({4}), b.f32({16, 64}), RopeStyle::neox);
       }},
      {"odd rotary dim", Errc::invalid_argument, "rope", "cos_sin_cache",
       [](Buffers& b) {
         ops::rope(b.o32({4, 2, 64}), b.o32({4, 1, 64}), b.i32({4}), b.f32({16, 63}), RopeStyle::neox);
       }},
      {"rotary dim > head dim", Errc::invalid_argument, "rope", "cos_sin_cache",
       [](Buffers& b) {
         ops::rope(b.o32({4, 2, 64}), b.o32({4, 1, 64}), b.i32({4}), b.f32({16, 128}), RopeStyle::neox);
       }},
      {"cache dtype", Errc::invalid_argument, "rope", "cos_sin_cache",
       [](Buffers& b) {
         ops::rope(b.bf16({4, 2, 64}), b.bf16({4, 1, 64}), b.i32({4}), b.bf16({16, 64}), RopeStyle::neox);
       }},
      {"position out of range", Errc::invalid_argument, "rope", "positions",
       [](Buffers& b) {
         std::vector<int64_t> pos{0, 1, 16, 2};
         ops::rope(b.o32({4, 2, 64}), TensorView(b.out.data() + 4 * 2 * 64, DType::f32, V{4, 1, 64}),
                   TensorView(pos.data(), DType::i64, V{4}), b.f32({16, 64}), RopeStyle::gptj);
       }},
      {"rope_cache theta", Errc::invalid_argument, "rope_cache", "theta",
       [](Buffers&) { ops::rope_cache(16, 64, -1.0); }},
      {"rope_cache scaling factor", Errc::invalid_argument, "rope_cache", "scaling.factor",
       [](Buffers&) {
         ops::RopeScaling s;
         s.type = ops::RopeScaling::Type::linear;
         s.factor = 0.0;
         ops::rope_cache(16, 64, 10000.0, s);
       }},
      {"rope_cache yarn betas", Errc::invalid_argument, "rope_cache", "scaling.beta_fast",
       [](Buffers&) {
         ops::RopeScaling s;
         s.type = ops::RopeScaling::Type::yarn;
         s.factor = 4.0;
         s.original_max_position = 4096;
         s.beta_fast = 0.5;
         ops::rope_cache(16, 64, 10000.0, s);
       }},
      {"rope_cache llama3 bands", Errc::invalid_argument, "rope_cache", "scaling.high_freq_factor",
       [](Buffers&) {
         ops::RopeScaling s;
         s.type = ops::RopeScaling::Type::llama3;
         s.factor = 8.0;
         s.original_max_position = 8192;
         s.high_freq_factor = 1.0;
         ops::rope_cache(16, 64, 10000.0, s);
       }},
      // linear
      {"w in features", Errc::invalid_argument, "linear", "w",
       [](Buffers& b) {
         ops::linear(b.f32({4, 64}), b.f32({8, 32}), nullptr, b.o32({4, 8}));
       }},
      {"bias size", Errc::invalid_argument, "linear", "bias",
       [](Buffers& b) {
         auto bias = b.f32({7});
         ops::linear(b.f32({4, 64}), b.f32({8, 64}), &bias, b.o32({4, 8}));
       }},
      // attention_backward
      {"lse dtype", Errc::invalid_argument, "attention_backward", "lse",
       [](Buffers& b) {
         ops::attention_backward(b.f32({1, 4, 2, 8}), b.f32({1, 4, 2, 8}), b.f32({1, 4, 1, 8}), b.f32({1, 4, 1, 8}),
                                 b.f32({1, 4, 2, 8}), b.bf16({1, 2, 4}), b.o32({1, 4, 2, 8}),
                                 TensorView(b.out.data() + 64, DType::f32, V{1, 4, 1, 8}),
                                 TensorView(b.out.data() + 96, DType::f32, V{1, 4, 1, 8}));
       }},
      {"dk shape", Errc::invalid_argument, "attention_backward", "dk",
       [](Buffers& b) {
         ops::attention_backward(b.f32({1, 4, 2, 8}), b.f32({1, 4, 2, 8}), b.f32({1, 4, 1, 8}), b.f32({1, 4, 1, 8}),
                                 b.f32({1, 4, 2, 8}), b.f32({1, 2, 4}), b.o32({1, 4, 2, 8}),
                                 TensorView(b.out.data() + 64, DType::f32, V{1, 4, 2, 8}),
                                 TensorView(b.out.data() + 128, DType::f32, V{1, 4, 1, 8}));
       }},
      {"no query heads", Errc::invalid_argument, "attention_backward", "q",
       [](Buffers& b) {
         ops::attention_backward(b.f32({1, 4, 0, 8}), b.f32({1, 4, 0, 8}), b.f32({1, 4, 1, 8}), b.f32({1, 4, 1, 8}),
                                 b.f32({1, 4, 0, 8}), b.f32({1, 0, 4}), b.o32({1, 4, 0, 8}),
                                 TensorView(b.out.data() + 64, DType::f32, V{1, 4, 1, 8}),
                                 TensorView(b.out.data() + 96, DType::f32, V{1, 4, 1, 8}));
       }},
      {"dout shape", Errc::invalid_argument, "attention_varlen_backward", "dout",
       [](Buffers& b) {
         ops::attention_varlen_backward(b.f32({5, 2, 8}), b.f32({4, 2, 8}), b.f32({4, 1, 8}), b.f32({4, 1, 8}),
                                        b.i32({2}), b.i32({2}), 4, 4, b.f32({4, 2, 8}), b.f32({2, 4}), b.o32({4, 2, 8}),
                                        TensorView(b.out.data() + 64, DType::f32, V{4, 1, 8}),
                                        TensorView(b.out.data() + 96, DType::f32, V{4, 1, 8}));
       }},
      // embedding
      {"ids dtype", Errc::invalid_argument, "embedding", "ids",
       [](Buffers& b) {
         ops::embedding(b.f32({4}), b.f32({10, 8}), b.o32({4, 8}));
       }},
      {"out columns", Errc::invalid_argument, "embedding", "out",
       [](Buffers& b) {
         ops::embedding(b.i32({4}), b.f32({10, 8}), b.o32({4, 9}));
       }},
      {"id out of range", Errc::invalid_argument, "embedding", "ids",
       [](Buffers& b) {
         std::vector<int32_t> ids{0, 10, 2};
         ops::embedding(TensorView(ids.data(), DType::i32, V{3}), b.f32({10, 8}), b.o32({3, 8}));
       }},
      {"dout tokens", Errc::invalid_argument, "embedding_backward", "dout",
       [](Buffers& b) {
         ops::embedding_backward(b.i32({4}), b.f32({5, 8}), b.o32({10, 8}));
       }},
      {"dtable dtype", Errc::invalid_argument, "embedding_backward", "dout",
       [](Buffers& b) {
         ops::embedding_backward(b.i32({4}), b.bf16({4, 8}), b.o32({10, 8}));
       }},
      {"backward id out of range", Errc::invalid_argument, "embedding_backward", "ids",
       [](Buffers& b) {
         std::vector<int64_t> ids{0, -3};
         ops::embedding_backward(TensorView(ids.data(), DType::i64, V{2}), b.f32({2, 8}), b.o32({10, 8}));
       }},
      // linear_backward
      {"no gradient", Errc::invalid_argument, "linear_backward", "dx",
       [](Buffers& b) {
         ops::linear_backward(b.f32({4, 8}), b.f32({4, 64}), b.f32({8, 64}), nullptr, nullptr, nullptr);
       }},
      {"dw shape", Errc::invalid_argument, "linear_backward", "dw",
       [](Buffers& b) {
         auto dw = b.o32({64, 8});
         ops::linear_backward(b.f32({4, 8}), b.f32({4, 64}), b.f32({8, 64}), nullptr, &dw, nullptr);
       }},
      {"w out features", Errc::invalid_argument, "linear_backward", "w",
       [](Buffers& b) {
         auto dx = b.o32({4, 64});
         ops::linear_backward(b.f32({4, 8}), b.f32({4, 64}), b.f32({9, 64}), &dx, nullptr, nullptr);
       }},
      {"dbias dtype", Errc::invalid_argument, "linear_backward", "dbias",
       [](Buffers& b) {
         auto dbias = TensorView(b.h.data(), DType::bf16, V{8});
         ops::linear_backward(b.f32({4, 8}), b.f32({4, 64}), b.f32({8, 64}), nullptr, nullptr, &dbias);
       }},
      // backward ops
      {"dx shape", Errc::invalid_argument, "rms_norm_backward", "dx",
       [](Buffers& b) {
         ops::rms_norm_backward(b.f32({4, 64}), b.f32({4, 64}), b.f32({64}), 1e-6f, b.o32({4, 32}),
                                TensorView(b.out.data() + 1024, DType::f32, V{64}));
       }},
      {"x dtype", Errc::invalid_argument, "rms_norm_backward", "x",
       [](Buffers& b) {
         ops::rms_norm_backward(b.f32({4, 64}), b.bf16({4, 64}), b.f32({64}), 1e-6f, b.o32({4, 64}),
                                TensorView(b.out.data() + 1024, DType::f32, V{64}));
       }},
      {"dweight size", Errc::invalid_argument, "rms_norm_backward", "dweight",
       [](Buffers& b) {
         ops::rms_norm_backward(b.f32({4, 64}), b.f32({4, 64}), b.f32({64}), 1e-6f, b.o32({4, 64}),
                                TensorView(b.out.data() + 1024, DType::f32, V{32}));
       }},
      {"eps", Errc::invalid_argument, "rms_norm_backward", "eps",
       [](Buffers& b) {
         ops::rms_norm_backward(b.f32({4, 64}), b.f32({4, 64}), b.f32({64}), -1.0f, b.o32({4, 64}),
                                TensorView(b.out.data() + 1024, DType::f32, V{64}));
       }},
      {"dresidual shape", Errc::invalid_argument, "fused_add_rms_norm_backward", "dresidual",
       [](Buffers& b) {
         ops::fused_add_rms_norm_backward(b.f32({4, 64}), b.f32({4, 64}), b.f32({64}), 1e-6f,
                                          TensorView(b.out.data() + 2048, DType::f32, V{4, 63}), b.o32({4, 64}),
                                          TensorView(b.out.data() + 1024, DType::f32, V{64}));
       }},
      {"dup shape", Errc::invalid_argument, "swiglu_backward", "dup",
       [](Buffers& b) {
         ops::swiglu_backward(b.f32({4, 64}), b.f32({4, 64}), b.f32({4, 64}), b.o32({4, 64}),
                              TensorView(b.out.data() + 1024, DType::f32, V{4, 65}));
       }},
      {"packed dx", Errc::invalid_argument, "swiglu_packed_backward", "dx",
       [](Buffers& b) {
         ops::swiglu_packed_backward(b.f32({4, 32}), b.f32({4, 64}), b.o32({4, 32}));
       }},
      {"packed x", Errc::invalid_argument, "swiglu_packed_backward", "x",
       [](Buffers& b) {
         ops::swiglu_packed_backward(b.f32({4, 32}), b.f32({4, 66}), b.o32({4, 64}));
       }},
      {"rotary dim > head dim", Errc::invalid_argument, "rope_backward", "cos_sin_cache",
       [](Buffers& b) {
         ops::rope_backward(b.o32({4, 2, 64}), TensorView(b.out.data() + 1024, DType::f32, V{4, 1, 64}), b.i32({4}),
                            b.f32({16, 66}), RopeStyle::neox);
       }},
      {"labels dtype", Errc::invalid_argument, "cross_entropy", "labels",
       [](Buffers& b) {
         ops::cross_entropy(b.f32({4, 64}), b.f32({4}), b.o32({4}), TensorView(b.out.data() + 8, DType::f32, V{4}));
       }},
      {"loss dtype", Errc::invalid_argument, "cross_entropy", "loss",
       [](Buffers& b) {
         ops::cross_entropy(b.f32({4, 64}), b.i32({4}), b.bf16({4}), TensorView(b.out.data() + 8, DType::f32, V{4}));
       }},
      {"label out of range", Errc::invalid_argument, "cross_entropy", "labels",
       [](Buffers& b) {
         std::vector<int64_t> labels{0, 63, 64, -100};
         ops::cross_entropy(b.f32({4, 64}), TensorView(labels.data(), DType::i64, V{4}), b.o32({4}),
                            TensorView(b.out.data() + 8, DType::f32, V{4}));
       }},
      {"label_smoothing", Errc::invalid_argument, "cross_entropy", "label_smoothing",
       [](Buffers& b) {
         ops::cross_entropy(b.f32({4, 64}), b.i32({4}), b.o32({4}), TensorView(b.out.data() + 8, DType::f32, V{4}),
                            {.label_smoothing = 1.5f});
       }},
      {"dlogits shape", Errc::invalid_argument, "cross_entropy_backward", "dlogits",
       [](Buffers& b) {
         ops::cross_entropy_backward(b.f32({4, 64}), b.i32({4}), b.f32({4}), b.f32({4}), b.o32({4, 63}));
       }},
      {"moment dtype", Errc::invalid_argument, "adamw_step", "exp_avg",
       [](Buffers& b) {
         ops::adamw_step(b.o32({64}), b.f32({64}), b.bf16({64}), TensorView(b.out.data() + 128, DType::f32, V{64}),
                         nullptr, nullptr, nullptr, {});
       }},
      {"lr not a scalar", Errc::invalid_argument, "adamw_step", "lr",
       [](Buffers& b) {
         auto lr = b.f32({2});
         ops::adamw_step(b.o32({64}), b.f32({64}), TensorView(b.out.data() + 64, DType::f32, V{64}),
                         TensorView(b.out.data() + 128, DType::f32, V{64}), nullptr, &lr, nullptr, {});
       }},
      {"step 0", Errc::invalid_argument, "adamw_step", "step",
       [](Buffers& b) {
         ops::adamw_step(b.o32({64}), b.f32({64}), TensorView(b.out.data() + 64, DType::f32, V{64}),
                         TensorView(b.out.data() + 128, DType::f32, V{64}), nullptr, nullptr, nullptr, {.step = 0});
       }},
      {"norm shape", Errc::invalid_argument, "global_grad_norm", "norm",
       [](Buffers& b) { ops::global_grad_norm(b.f32({64}), b.o32({2}), nullptr, 1.0f); }},
      // Lists: every entry checked, named with its index, before anything runs.
      {"list gradient length", Errc::invalid_argument, "adamw_step", "grad[1]",
       [](Buffers& b) {
         auto at = [&](int64_t offset, int64_t n) { return TensorView(b.out.data() + offset, DType::f32, V{n}); };
         ops::adamw_step({{at(0, 64), b.f32({64}), at(64, 64), at(128, 64)},
                          {at(192, 32), b.f32({31}), at(224, 32), at(256, 32)}},
                         nullptr, nullptr, {});
       }},
      {"list dtypes", Errc::invalid_argument, "adamw_step", "param[1]",
       [](Buffers& b) {
         auto at = [&](int64_t offset, int64_t n) { return TensorView(b.out.data() + offset, DType::f32, V{n}); };
         ops::adamw_step({{at(0, 64), b.f32({64}), at(64, 64), at(128, 64)},
                          {b.bf16({32}), b.bf16({32}), at(224, 32), at(256, 32)}},
                         nullptr, nullptr, {});
       }},
      {"master weights for some entries", Errc::invalid_argument, "adamw_step", "master[2]",
       [](Buffers& b) {
         auto at = [&](int64_t offset, int64_t n) { return TensorView(b.out.data() + offset, DType::f32, V{n}); };
         const TensorView master0 = at(1000, 8), master1 = at(1008, 8);
         ops::adamw_step({{at(0, 8), b.f32({8}), at(8, 8), at(16, 8), &master0},
                          {at(24, 8), b.f32({8}), at(32, 8), at(40, 8), &master1},
                          {at(48, 8), b.f32({8}), at(56, 8), at(64, 8)}},
                         nullptr, nullptr, {});
       }},
      {"empty list", Errc::invalid_argument, "adamw_step", "tensors",
       [](Buffers&) { ops::adamw_step(std::vector<AdamWTensors>{}, nullptr, nullptr, {}); }},
      {"list gradient dtypes", Errc::invalid_argument, "global_grad_norm", "grad[2]",
       [](Buffers& b) { ops::global_grad_norm({b.f32({64}), b.f32({8}), b.bf16({8})}, b.o32({1}), nullptr, 1.0f); }},
      {"list gradient rank", Errc::invalid_argument, "global_grad_norm", "grad[1]",
       [](Buffers& b) { ops::global_grad_norm({b.f32({64}), b.f32({8, 8})}, b.o32({1}), nullptr, 1.0f); }},
      {"empty gradient list", Errc::invalid_argument, "global_grad_norm", "grads",
       [](Buffers& b) { ops::global_grad_norm(std::vector<TensorView>{}, b.o32({1}), nullptr, 1.0f); }},
    };
    const std::vector<BadCall> serving = serving_bad_calls();
    all.insert(all.end(), serving.begin(), serving.end());
    return all;
  }();
  return calls;
}

}  // namespace xhal

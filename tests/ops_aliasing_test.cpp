// Aliasing rules of the op front ends (docs/ops.md, "Aliasing"): an output that shares memory with
// an input or another output is refused, naming both; exact in-place views and packed views that
// interleave without sharing bytes are accepted.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "op_buffers.hpp"
#include "xhal/xhal.hpp"

namespace xhal {
namespace {

// An output that shares memory with an input (or another output) in a way no kernel can honour is
// refused before dispatch, naming both arguments; nothing is written.
TEST(Ops, OutputsOverlappingInputsAreRefused) {
  struct Overlap {
    const char* op;
    const char* arg;
    const char* other;
    std::function<void(Buffers&)> call;
  };
  const std::vector<Overlap> overlaps = {
      {"linear", "out", "x",
       [](Buffers& b) {
         ops::linear(b.o32({4, 64}), b.f32({8, 64}), nullptr, b.o32({4, 8}));
       }},
      {"linear_backward", "dx", "dout",
       [](Buffers& b) {
         auto dx = b.o32({4, 8});
         ops::linear_backward(b.o32({4, 8}), b.f32({4, 8}), b.f32({8, 8}), &dx, nullptr, nullptr);
       }},
      {"linear_backward", "dw", "dbias",
       [](Buffers& b) {
         auto dw = b.o32({8, 64});
         auto dbias = TensorView(b.out.data() + 8, DType::f32, std::vector<int64_t>{8});
         ops::linear_backward(b.f32({4, 8}), b.f32({4, 64}), b.f32({8, 64}), nullptr, &dw, &dbias);
       }},
      {"linear", "out", "bias",
       [](Buffers& b) {
         auto bias = b.o32({8});
         ops::linear(b.f32({4, 64}), b.f32({8, 64}), &bias, b.o32({4, 8}));
       }},
      {"swiglu_packed", "out", "x",
       [](Buffers& b) {
         ops::swiglu_packed(b.o32({4, 16}), TensorView(b.out.data() + 40, DType::f32, {4, 8}));
       }},
      {"softmax", "out", "x",
       [](Buffers& b) {
         ops::softmax(b.o32({4, 16}), TensorView(b.out.data() + 8, DType::f32, {4, 16}));
       }},
      {"add", "out", "y",  // a broadcast row cannot be the output
       [](Buffers& b) {
         ops::add(b.f32({4, 16}), b.o32({16}), b.o32({4, 16}));
       }},
      {"mul", "out", "x",
       [](Buffers& b) {
         ops::mul(b.o32({4, 16}), b.f32({4, 16}), TensorView(b.out.data() + 4, DType::f32, {4, 16}));
       }},
      {"argmax", "indices", "logits",
       [](Buffers& b) {
         ops::argmax(b.o32({4, 16}), TensorView(b.out.data() + 8, DType::i32, {4}));
       }},
      {"top_k", "values", "x",
       [](Buffers& b) {
         ops::top_k(b.o32({4, 16}), TensorView(b.out.data() + 8, DType::f32, {4, 2}),
                    TensorView(b.out.data() + 128, DType::i32, {4, 2}));
       }},
      {"top_k", "indices", "values",
       [](Buffers& b) {
         ops::top_k(b.f32({4, 16}), b.o32({4, 2}), TensorView(b.out.data() + 4, DType::i32, {4, 2}));
       }},
      {"sample", "tokens", "logits",
       [](Buffers& b) {
         ops::sample(b.o32({4, 16}), TensorView(b.out.data() + 8, DType::i32, {4}));
       }},
      {"sample", "tokens", "temperature",
       [](Buffers& b) {
         const TensorView temperature = b.o32({4});
         ops::sample(b.f32({4, 16}), TensorView(b.out.data() + 2, DType::i32, {4}), {}, {&temperature});
       }},
      {"gelu_and_mul_packed", "out", "x",
       [](Buffers& b) {
         ops::gelu_and_mul_packed(b.o32({4, 16}), TensorView(b.out.data() + 40, DType::f32, {4, 8}));
       }},
      {"gelu_and_mul", "out", "up",
       [](Buffers& b) {
         ops::gelu_and_mul(b.f32({4, 16}), b.o32({4, 16}), TensorView(b.out.data() + 8, DType::f32, {4, 16}));
       }},
      {"attention", "out", "lse",
       [](Buffers& b) {
         auto lse = TensorView(b.out.data() + 8, DType::f32, {1, 2, 4});
         ops::attention(b.f32({1, 4, 2, 8}), b.f32({1, 4, 2, 8}), b.f32({1, 4, 2, 8}), b.o32({1, 4, 2, 8}), {}, &lse);
       }},
      {"attention", "out", "v",
       [](Buffers& b) {
         ops::attention(b.f32({1, 4, 2, 8}), b.f32({1, 4, 2, 8}), b.o32({1, 4, 2, 8}), b.o32({1, 4, 2, 8}));
       }},
      {"merge_attention_states", "out", "out_b",  // shifted by one element: not in place, not apart
       [](Buffers& b) {
         ops::merge_attention_states(b.f32({4, 2, 8}), b.f32({2, 4}), b.o32({4, 2, 8}), b.f32({2, 4}),
                                     TensorView(b.out.data() + 1, DType::f32, {4, 2, 8}));
       }},
      {"merge_attention_states", "lse", "out",
       [](Buffers& b) {
         auto lse = TensorView(b.out.data() + 8, DType::f32, {2, 4});
         ops::merge_attention_states(b.f32({4, 2, 8}), b.f32({2, 4}), b.f32({4, 2, 8}), b.f32({2, 4}), b.o32({4, 2, 8}),
                                     &lse);
       }},
      {"kv_cache_write", "v_cache", "k_cache",
       [](Buffers& b) {
         ops::kv_cache_write(b.f32({4, 2, 8}), b.f32({4, 2, 8}), b.i32({4}), b.o32({3, 16, 2, 8}),
                             TensorView(b.out.data() + 100, DType::f32, {3, 16, 2, 8}));
       }},
      {"rope", "q", "k",
       [](Buffers& b) {
         ops::rope(b.o32({4, 2, 8}), b.o32({4, 2, 8}), b.i32({4}), b.f32({16, 8}), RopeStyle::neox);
       }},
      {"rms_norm", "out", "x",  // shifted by one element: not in place, not apart
       [](Buffers& b) {
         ops::rms_norm(b.o32({4, 64}), b.f32({64}), 1e-6f, TensorView(b.out.data() + 1, DType::f32, {4, 64}));
       }},
      {"fused_add_rms_norm", "out", "residual",
       [](Buffers& b) {
         ops::fused_add_rms_norm(b.f32({4, 64}), b.o32({4, 64}), b.f32({64}), 1e-6f, b.o32({4, 64}));
       }},
      {"rms_norm_backward", "dx", "dout",  // a row's dx needs the whole row of dout
       [](Buffers& b) {
         ops::rms_norm_backward(b.o32({4, 64}), b.f32({4, 64}), b.f32({64}), 1e-6f, b.o32({4, 64}),
                                TensorView(b.out.data() + 1024, DType::f32, {64}));
       }},
      {"fused_add_rms_norm_backward", "dx", "dresidual",  // shifted: not in place, not apart
       [](Buffers& b) {
         ops::fused_add_rms_norm_backward(b.f32({4, 64}), b.f32({4, 64}), b.f32({64}), 1e-6f, b.o32({4, 64}),
                                          TensorView(b.out.data() + 1, DType::f32, {4, 64}),
                                          TensorView(b.out.data() + 1024, DType::f32, {64}));
       }},
      {"adamw_step", "exp_avg", "param",  // the one starting later is named first
       [](Buffers& b) {
         ops::adamw_step(b.o32({64}), b.f32({64}), TensorView(b.out.data() + 32, DType::f32, {64}),
                         TensorView(b.out.data() + 128, DType::f32, {64}), nullptr, nullptr, nullptr, {});
       }},
      {"adamw_step", "exp_avg_sq[1]", "grad[0]",  // across the entries of a list
       [](Buffers& b) {
         auto at = [&](int64_t offset) { return TensorView(b.out.data() + offset, DType::f32, {64}); };
         const TensorView grad0 = b.f32({64}), grad1(b.f.data() + 512, DType::f32, {64});
         const TensorView exp_avg_sq1(b.f.data() + 16, DType::f32, {64});
         ops::adamw_step({{at(0), grad0, at(64), at(128)}, {at(192), grad1, at(256), exp_avg_sq1}}, nullptr, nullptr,
                         {});
       }},
      {"global_grad_norm", "norm", "grad[1]",
       [](Buffers& b) {
         ops::global_grad_norm({b.f32({64}), TensorView(b.out.data(), DType::f32, {64})},
                               TensorView(b.out.data() + 8, DType::f32, {1}), nullptr, 1.0f);
       }},
      {"swiglu_backward", "dup", "dgate",
       [](Buffers& b) {
         ops::swiglu_backward(b.f32({4, 64}), b.f32({4, 64}), b.f32({4, 64}), b.o32({4, 64}), b.o32({4, 64}));
       }},
      {"paged_prefill", "out", "k_cache",
       [](Buffers& b) {
         ops::paged_prefill(b.f32({6, 4, 8}), b.o32({4, 16, 2, 8}), b.f32({4, 16, 2, 8}), b.i32({3}), b.i32({2, 2}),
                            b.i32({2}), 4, TensorView(b.out.data() + 64, DType::f32, {6, 4, 8}));
       }},
      {"quantize", "q", "x",
       [](Buffers& b) {
         ops::quantize(b.o32({4, 16}), TensorView(b.out.data() + 4, DType::f8_e4m3, {4, 16}), b.f32({1}));
       }},
      {"linear_fp8", "out", "x_scale",
       [](Buffers& b) {
         ops::linear_fp8(TensorView(b.h.data(), DType::f8_e4m3, {4, 16}), TensorView(b.out.data() + 3, DType::f32, {1}),
                         TensorView(b.h.data() + 64, DType::f8_e4m3, {8, 16}), b.f32({1}), nullptr, b.o32({4, 8}));
       }},
      {"paged_attention", "out", "q",
       [](Buffers& b) {
         ops::paged_attention(b.o32({2, 4, 8}), b.f32({4, 16, 2, 8}), b.f32({4, 16, 2, 8}), b.i32({2, 2}), b.i32({2}),
                              b.o32({2, 4, 8}));
       }},
  };
  for (const Overlap& o : overlaps) {
    SCOPED_TRACE(std::string(o.op) + ": '" + o.arg + "' over '" + o.other + "'");
    Buffers buffers;
    try {
      o.call(buffers);
      ADD_FAILURE() << "no error thrown";
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_EQ(e.code(), Errc::invalid_argument) << message;
      EXPECT_EQ(message.rfind(std::string("xhal::ops::") + o.op + ": argument '" + o.arg +
                                  "': expected memory apart from '" + o.other + "'",
                              0),
                0u)
          << message;
    }
    EXPECT_TRUE(buffers.out_untouched()) << "an output was written before the error";
  }
}

// What may share memory does: element-wise outputs written in place over an input, and q, k, v (or
// q and k for rope) as interleaved views of one packed qkv buffer.
TEST(Ops, InPlaceAndPackedViewsAreAccepted) {
  std::vector<float> x(4 * 64), w(64, 1.5f), expected(x.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 13) - 6.0f;
  ops::rms_norm(TensorView(x.data(), DType::f32, {4, 64}), TensorView(w.data(), DType::f32, {64}), 1e-6f,
                TensorView(expected.data(), DType::f32, {4, 64}));
  ops::rms_norm(TensorView(x.data(), DType::f32, {4, 64}), TensorView(w.data(), DType::f32, {64}), 1e-6f,
                TensorView(x.data(), DType::f32, {4, 64}));
  EXPECT_EQ(x, expected) << "rms_norm in place";

  std::vector<float> gate(256), up(256, 2.0f), swiglu_expected(256);
  for (size_t i = 0; i < gate.size(); ++i) gate[i] = float(i) / 64.0f - 2.0f;
  ops::swiglu(TensorView(gate.data(), DType::f32, {4, 64}), TensorView(up.data(), DType::f32, {4, 64}),
              TensorView(swiglu_expected.data(), DType::f32, {4, 64}));
  ops::swiglu(TensorView(gate.data(), DType::f32, {4, 64}), TensorView(up.data(), DType::f32, {4, 64}),
              TensorView(gate.data(), DType::f32, {4, 64}));
  EXPECT_EQ(gate, swiglu_expected) << "swiglu in place over gate";

  // Tokens of a packed [T, (Hq + 2 Hkv) * D] buffer: q, k, v are views with the packed row stride.
  const int64_t T = 5, Hq = 4, Hkv = 2, D = 16, row = (Hq + 2 * Hkv) * D;
  std::vector<float> qkv(size_t(T * row)), out(size_t(T * Hq * D));
  for (size_t i = 0; i < qkv.size(); ++i) qkv[i] = float(i % 7) / 7.0f;
  const TensorView q(qkv.data(), DType::f32, {T, Hq, D}, {row, D, 1});
  const TensorView k(qkv.data() + Hq * D, DType::f32, {T, Hkv, D}, {row, D, 1});
  const TensorView v(qkv.data() + (Hq + Hkv) * D, DType::f32, {T, Hkv, D}, {row, D, 1});
  std::vector<int32_t> positions{0, 1, 2, 3, 4};
  const Tensor cache = ops::rope_cache(8, D, 10000.0);
  EXPECT_NO_THROW(ops::rope(q, k, TensorView(positions.data(), DType::i32, {T}), cache, RopeStyle::neox));
  const auto batched = [](const TensorView& t) {
    return TensorView(t.data(), t.dtype(), {1, t.size(0), t.size(1), t.size(2)},
                      {t.size(0) * t.stride(0), t.stride(0), t.stride(1), 1});
  };
  EXPECT_NO_THROW(ops::attention(batched(q), batched(k), batched(v), TensorView(out.data(), DType::f32, {1, T, Hq, D}),
                                 {.causal = true}));
}

}  // namespace
}  // namespace xhal
